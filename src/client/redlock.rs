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
mod tests {
    use super::*;
    use crate::client::{node_redlock, presets};
    use crate::process::Output;
    use crate::proto::command::{hex, sha1_of};
    use crate::rng::Seed;

    const ME: ProcId = ProcId(100);
    const RESOURCE: ProcId = ProcId(200);
    const START_WALL_MS: i64 = 1_700_000_000_000;
    const START_MONO_NS: u64 = 5_000_000_000;
    const MS: u64 = NS_PER_MS;

    fn config(options: RedlockOptions) -> RedlockConfig {
        RedlockConfig {
            lock: 0,
            key: Bytes::from("lock"),
            nodes: (1..=5).map(ProcId).collect(),
            resource: None,
            hold: NsRange::fixed(5_000 * MS),
            think: NsRange::fixed(500 * MS),
            rounds: None,
            token_prefix: "c1".into(),
            options,
        }
    }

    fn preset(name: &str) -> RedlockOptions {
        presets::redlock(name, 10_000).unwrap()
    }

    #[derive(Clone, Debug)]
    struct Req {
        to: ProcId,
        id: u64,
        cmd: Command,
    }

    /// The client under test plus a minimal loop: its own clocks (wall follows monotonic
    /// except for explicit steps) and its pending timers, fired in order by `advance`.
    struct Harness {
        client: RedlockClient,
        rng: Prng,
        mono_ns: u64,
        wall_step_ms: i64,
        timers: Vec<(u64, u64)>,
    }

    impl Harness {
        fn new(config: RedlockConfig) -> Harness {
            Harness {
                client: RedlockClient::new(config),
                rng: Seed(1).stream("t", 0),
                mono_ns: START_MONO_NS,
                wall_step_ms: 0,
                timers: Vec::new(),
            }
        }
        fn wall_ms(&self) -> i64 {
            START_WALL_MS + ((self.mono_ns - START_MONO_NS) / MS) as i64 + self.wall_step_ms
        }
        fn run(&mut self, f: impl FnOnce(&mut RedlockClient, &mut Cx<'_>)) -> Vec<Output> {
            let mut out = Vec::new();
            let wall_ms = self.wall_ms();
            let mut cx = Cx::new(ME, wall_ms, self.mono_ns, &mut self.rng, &mut out);
            f(&mut self.client, &mut cx);
            for o in &out {
                if let Output::Timer { after_ns, tag } = o {
                    self.timers.push((self.mono_ns + after_ns, *tag));
                }
            }
            out
        }
        fn start(&mut self) -> Vec<Output> {
            self.run(|c, cx| c.on_start(cx))
        }
        fn reply(&mut self, req: &Req, reply: Reply) -> Vec<Output> {
            let (from, id) = (req.to, req.id);
            self.run(|c, cx| c.on_message(cx, from, Msg::Reply { id, reply }))
        }
        fn resource_ack(&mut self, id: u64, version: u64) -> Vec<Output> {
            let msg = Msg::ResourceAck {
                id,
                accepted: true,
                version,
            };
            self.run(|c, cx| c.on_message(cx, RESOURCE, msg))
        }
        /// Moves time on by `ns`, firing the timers that fall due on the way.
        fn advance(&mut self, ns: u64) -> Vec<Output> {
            let target = self.mono_ns + ns;
            let mut all = Vec::new();
            loop {
                let next = (0..self.timers.len())
                    .filter(|&i| self.timers[i].0 <= target)
                    .min_by_key(|&i| self.timers[i].0);
                let Some(i) = next else { break };
                let (due, tag) = self.timers.remove(i);
                // A timer overdue after a pause fires late, at the current time.
                self.mono_ns = self.mono_ns.max(due);
                all.extend(self.run(|c, cx| c.on_timer(cx, tag)));
            }
            self.mono_ns = target;
            all
        }
    }

    fn requests(out: &[Output]) -> Vec<Req> {
        out.iter()
            .filter_map(|o| match o {
                Output::Send {
                    to,
                    msg: Msg::Request { id, cmd },
                } => Some(Req {
                    to: *to,
                    id: *id,
                    cmd: cmd.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// The observations, facts aside (`facts` has them).
    fn observations(out: &[Output]) -> Vec<Observation> {
        out.iter()
            .filter_map(|o| match o {
                Output::Observe(Observation::Fact(_)) => None,
                Output::Observe(obs) => Some(obs.clone()),
                _ => None,
            })
            .collect()
    }

    /// The facts observed (the unlock call's start and return).
    fn facts(out: &[Output]) -> Vec<Fact> {
        out.iter()
            .filter_map(|o| match o {
                Output::Observe(Observation::Fact(f)) => Some(f.clone()),
                _ => None,
            })
            .collect()
    }

    /// Timers other than the request timeout, as (after_ns, tag).
    fn state_timers(out: &[Output]) -> Vec<(u64, u64)> {
        out.iter()
            .filter_map(|o| match o {
                Output::Timer { after_ns, tag } if *tag != Timer::Request.tag() => {
                    Some((*after_ns, *tag))
                }
                _ => None,
            })
            .collect()
    }

    fn acquired_validity(out: &[Output]) -> Option<u64> {
        observations(out).into_iter().find_map(|o| match o {
            Observation::Acquired { validity_ns, .. } => validity_ns,
            _ => None,
        })
    }

    fn is_set_nx_px(cmd: &Command, token: &[u8]) -> bool {
        matches!(cmd, Command::Set { key, value, cond: Some(SetCond::Nx), get: false,
            expiry: Some(SetExpiry::Px(10_000)) } if &key[..] == b"lock" && &value[..] == token)
    }

    fn is_unlock(cmd: &Command, token: &[u8]) -> bool {
        matches!(cmd, Command::Eval { script: ScriptRef::Source(s), keys, args, .. }
            if &s.source[..] == UNLOCK_SRC.as_bytes() && keys.len() == 1 && &keys[0][..] == b"lock"
                && args.len() == 1 && &args[0][..] == token)
    }

    /// A node's yes or no to an acquire: OK or nil to `SET NX`, 1 or 0 to node-redlock's
    /// acquire script.
    fn grant(h: &Harness, yes: bool) -> Reply {
        match (h.client.acquire_script.is_some(), yes) {
            (true, yes) => Reply::Int(i64::from(yes)),
            (false, true) => Reply::Ok,
            (false, false) => Reply::Nil,
        }
    }

    /// Starts an attempt and answers it: `oks` grants then refusals, after `elapsed_ns`.
    fn attempt(h: &mut Harness, oks: usize, elapsed_ns: u64) -> Vec<Output> {
        let reqs = requests(&h.start());
        h.advance(elapsed_ns);
        let mut out = Vec::new();
        for (i, r) in reqs.iter().enumerate() {
            let reply = grant(h, i < oks);
            out.extend(h.reply(r, reply));
        }
        out
    }

    #[test]
    fn a_majority_within_the_deadline_acquires_with_validity_ttl_minus_elapsed_minus_drift() {
        // redis-docs preset: drift = 10 s · 1 % + 2 ms = 102 ms; elapsed 5.25 ms.
        let mut h = Harness::new(config(preset("redis-docs")));
        let start = h.start();
        let reqs = requests(&start);
        assert_eq!(reqs.len(), 5);
        assert!(reqs.iter().all(|r| is_set_nx_px(&r.cmd, b"c1-1")));
        assert_eq!(
            reqs.iter().map(|r| r.to).collect::<Vec<_>>(),
            (1..=5).map(ProcId).collect::<Vec<_>>()
        );
        // One timer for the whole fan-out's deadline.
        let timeouts: Vec<_> = start
            .iter()
            .filter(|o| {
                matches!(
                    o,
                    Output::Timer { tag, .. } if *tag == Timer::Request.tag()
                )
            })
            .collect();
        assert_eq!(timeouts.len(), 1);
        h.advance(2_500_000);
        for r in &reqs[..3] {
            assert!(acquired_validity(&h.reply(r, Reply::Ok)).is_none());
        }
        h.advance(2_750_000);
        assert!(acquired_validity(&h.reply(&reqs[3], Reply::Nil)).is_none());
        let out = h.reply(&reqs[4], Reply::Nil);
        assert_eq!(acquired_validity(&out), Some(9_892_750_000));

        // redsync: no +2 ms, so 2 ms more validity for the same elapsed time.
        let mut h = Harness::new(config(preset("redsync")));
        assert_eq!(
            acquired_validity(&attempt(&mut h, 3, 5_250_000)),
            Some(9_894_750_000)
        );

        // Two nodes never answer: decided at the 50 ms deadline, elapsed = 50 ms.
        let mut h = Harness::new(config(preset("redis-docs")));
        let reqs = requests(&h.start());
        h.advance(MS);
        for r in &reqs[..3] {
            h.reply(r, Reply::Ok);
        }
        let out = h.advance(100 * MS);
        assert_eq!(acquired_validity(&out), Some(9_848_000_000));
    }

    #[test]
    fn redlock_rb_2_waits_200_plus_rand_50_ms_never_less_never_250() {
        // client.rb:297 `retry_delay + rand(retry_jitter)`: [200, 250) ms.
        let o = preset("redlock-rb-2");
        let mut rng = Prng::new(7, 0);
        let (mut lo, mut hi) = (u64::MAX, 0);
        for _ in 0..10_000 {
            let d = o.retry_delay_ns(&mut rng);
            assert!((200 * NS_PER_MS..250 * NS_PER_MS).contains(&d), "{d}");
            lo = lo.min(d);
            hi = hi.max(d);
        }
        // Both ends are reached, so the draw is not stuck at the fixed delay.
        assert!(lo < 201 * NS_PER_MS && hi >= 249 * NS_PER_MS, "{lo} {hi}");
    }

    #[test]
    fn redlock_rb_2_is_monotonic_with_4_attempts_and_redlock_rb_stays_wall_clock() {
        let current = preset("redlock-rb-2");
        assert_eq!(current.clock, ElapsedClock::Monotonic);
        assert_eq!(current.retry_count, 4);
        assert_eq!(current.per_node_timeout_ms, 100);
        // (10 s · 0.01).to_i + 2 = 102 ms.
        assert_eq!(current.drift_ns(), 102 * NS_PER_MS);
        let old = preset("redlock-rb");
        assert_eq!(old.clock, ElapsedClock::Wall);
        assert_eq!(old.retry_count, 3);
        assert!(old.random_delay && !old.jitter_added_only);
    }

    #[test]
    fn without_jitter_added_only_the_jitter_is_symmetric_as_before() {
        let o = RedlockOptions {
            retry_jitter_ms: 50,
            ..preset("redis-docs")
        };
        let o = RedlockOptions {
            random_delay: false,
            ..o
        };
        let mut rng = Prng::new(7, 0);
        let below = (0..1000)
            .map(|_| o.retry_delay_ns(&mut rng))
            .filter(|d| *d < 200 * NS_PER_MS)
            .count();
        assert!(below > 0, "a symmetric jitter draws below the delay");
    }

    #[test]
    fn a_minority_unlocks_all_nodes_retries_after_the_delay_then_gives_up() {
        let mut h = Harness::new(config(preset("redlock-py")));
        let mut out = h.start();
        for n in 1..=3u64 {
            let token = format!("c1-{n}");
            let reqs = requests(&out);
            assert_eq!(reqs.len(), 5);
            assert!(reqs.iter().all(|r| is_set_nx_px(&r.cmd, token.as_bytes())));
            let attempts = observations(&out)
                .iter()
                .filter(|o| matches!(o, Observation::Attempt { .. }))
                .count();
            assert_eq!(attempts, usize::from(n == 1), "one Attempt per round");
            h.advance(MS);
            let mut replies = Vec::new();
            for (i, r) in reqs.iter().enumerate() {
                replies.extend(h.reply(r, if i < 2 { Reply::Ok } else { Reply::Nil }));
            }
            assert_eq!(acquired_validity(&replies), None);
            let unlocks = requests(&replies);
            assert_eq!(unlocks.len(), 5, "unlock goes to every node");
            assert!(unlocks.iter().all(|r| is_unlock(&r.cmd, token.as_bytes())));
            let gave_up = observations(&replies).contains(&Observation::GaveUp { lock: 0 });
            let timers = state_timers(&replies);
            assert_eq!(timers.len(), 1);
            if n < 3 {
                assert!(!gave_up);
                assert_eq!(timers[0].0, 200 * MS, "retry after the fixed delay");
                assert!(h.advance(199 * MS).is_empty());
                out = h.advance(MS);
            } else {
                assert!(gave_up, "GaveUp after retry_count attempts");
                assert_eq!(timers[0].0, 500 * MS, "then think");
                out = h.advance(500 * MS);
            }
        }
        // A new round: a new Attempt, with a fresh token.
        assert_eq!(
            observations(&out),
            vec![Observation::Attempt {
                lock: 0,
                token: Bytes::from("c1-4")
            }]
        );
        // Unlock replies of the failed attempts are stale: they change nothing.
        let stale = Req {
            to: ProcId(1),
            id: 1,
            cmd: Command::Ping(None),
        };
        assert!(h.reply(&stale, Reply::Int(1)).is_empty());
    }

    #[test]
    fn a_wall_clock_stepping_back_during_the_attempt_inflates_validity() {
        // Pitfall 13: NTP steps the wall clock back 500 ms while the replies are in flight.
        let run = |clock: ElapsedClock, step_ms: i64| {
            let mut h = Harness::new(config(RedlockOptions {
                clock,
                ..preset("redis-docs")
            }));
            let reqs = requests(&h.start());
            h.advance(5 * MS);
            h.wall_step_ms = step_ms;
            let mut out = Vec::new();
            for r in &reqs {
                out.extend(h.reply(r, Reply::Ok));
            }
            acquired_validity(&out)
        };
        let mono = run(ElapsedClock::Monotonic, -500).unwrap();
        let wall = run(ElapsedClock::Wall, -500).unwrap();
        assert_eq!(mono, 9_893_000_000, "10 000 − 5 − 102 ms");
        // Wall: elapsed = 5 − 500 = −495 ms, so validity = 10 000 + 495 − 102 ms: longer
        // than the TTL itself, which no node grants.
        assert_eq!(wall, 10_393_000_000);
        assert_eq!(wall - mono, 500 * MS);
        assert!(wall > 10_000 * MS);
        // A step forward of 10 s makes the same healthy attempt fail on the wall clock only.
        assert_eq!(run(ElapsedClock::Monotonic, 10_000), Some(9_893_000_000));
        assert_eq!(run(ElapsedClock::Wall, 10_000), None);
    }

    #[test]
    fn skipping_the_validity_check_acquires_on_a_majority_after_the_ttl_has_passed() {
        // node-redlock v5 measures on the wall clock; it stepped 11 s forward mid-attempt.
        let run = |skip: bool| {
            let mut h = Harness::new(config(RedlockOptions {
                skip_validity_check: skip,
                ..preset("node-redlock")
            }));
            let reqs = requests(&h.start());
            h.advance(5 * MS);
            h.wall_step_ms = 11_000;
            let mut out = Vec::new();
            for (i, r) in reqs.iter().enumerate() {
                let reply = grant(&h, i < 3);
                out.extend(h.reply(r, reply));
            }
            out
        };
        let out = run(true);
        assert_eq!(acquired_validity(&out), Some(0), "validity clamped at 0");
        assert!(requests(&out).is_empty(), "no unlock: it believes it holds");
        let out = run(false);
        assert_eq!(acquired_validity(&out), None);
        // v5 keeps its keys for the next attempt (node-redlock#369): no unlock, a retry timer.
        assert!(requests(&out).is_empty());
        assert_eq!(state_timers(&out).len(), 1);

        // Same on the monotonic clock, with a per-node timeout long enough for slow replies.
        let mut h = Harness::new(config(RedlockOptions {
            clock: ElapsedClock::Monotonic,
            per_node_timeout_ms: 20_000,
            ..preset("node-redlock")
        }));
        assert_eq!(acquired_validity(&attempt(&mut h, 3, 11_000 * MS)), Some(0));
    }

    #[test]
    fn redlock_py_retries_after_a_fixed_delay_and_redlock_rb_after_a_random_one() {
        // Through the client: the retry timer is exactly 200 ms, and the stream is untouched.
        let mut h = Harness::new(config(preset("redlock-py")));
        let before = h.rng.clone();
        let out = attempt(&mut h, 2, MS);
        assert_eq!(state_timers(&out)[0].0, 200 * MS);
        assert_eq!(h.rng.next_u64(), before.clone().next_u64());

        let draws = |name: &str| {
            let o = preset(name);
            let mut rng = Seed(7).stream("t", 0);
            (0..1_000)
                .map(|_| o.retry_delay_ns(&mut rng))
                .collect::<Vec<_>>()
        };
        assert!(draws("redlock-py").iter().all(|&d| d == 200 * MS));
        let rb = draws("redlock-rb");
        assert!(rb.iter().all(|&d| d <= 200 * MS));
        assert!(rb.iter().any(|&d| d < 20 * MS) && rb.iter().any(|&d| d > 180 * MS));
        let node = draws("node-redlock");
        assert!(node.iter().all(|&d| (100 * MS..=300 * MS).contains(&d)));
        let redsync = draws("redsync");
        assert!(redsync.iter().all(|&d| (50 * MS..=250 * MS).contains(&d)));
    }

    /// Acquires with all 5 nodes, extend every 3 s in `mode`; returns the extend requests.
    fn acquire_then_extend(h: &mut Harness) -> Vec<Req> {
        let out = attempt(h, 5, MS);
        assert!(acquired_validity(&out).is_some());
        let mut timers = state_timers(&out);
        timers.sort();
        assert_eq!(
            timers.iter().map(|t| t.0).collect::<Vec<_>>(),
            vec![3_000 * MS, 5_000 * MS],
            "extend timer, hold timer"
        );
        requests(&h.advance(3_000 * MS))
    }

    #[test]
    fn set_if_missing_extend_is_redsyncs_one_script_on_every_node_and_counts_nonzero() {
        let mut h = Harness::new(config(RedlockOptions {
            extend: Some((3_000, ExtendMode::SetIfMissing)),
            ..preset("redis-docs")
        }));
        let reqs = acquire_then_extend(&mut h);
        assert_eq!(reqs.len(), 5);
        for r in &reqs {
            assert!(
                matches!(&r.cmd, Command::Eval { script: ScriptRef::Source(s), args, .. }
                if &s.source[..] == TOUCH_WITH_SET_NX_SRC.as_bytes() && &args[0][..] == b"c1-1"
                    && &args[1][..] == b"10000"),
                "{:?}",
                r.cmd
            );
        }
        assert_eq!(
            hex(&sha1_of(TOUCH_WITH_SET_NX_SRC.as_bytes())),
            "b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79",
            "redsync v4.17.0 scripts.go pins this SHA1"
        );
        h.advance(MS);
        // 1: extended, or set where missing (the script does both in one call); 0: another
        // client's key. Nothing more is sent: the repair happened inside the script.
        for r in &reqs[..3] {
            assert!(requests(&h.reply(r, Reply::Int(1))).is_empty());
        }
        h.advance(MS);
        h.reply(&reqs[3], Reply::Int(0));
        let out = h.reply(&reqs[4], Reply::Int(0));
        // 3 of 5; elapsed 2 ms.
        assert_eq!(
            observations(&out),
            vec![Observation::Extended {
                lock: 0,
                token: Bytes::from("c1-1"),
                validity_ns: Some(9_896_000_000),
                believed_until: None,
            }]
        );
        // The next extend is due 3 s after this one started.
        assert_eq!(state_timers(&out)[0].0, 2_998 * MS);
    }

    #[test]
    fn a_failed_script_extend_reports_lost_and_releases_without_writing() {
        let mut cfg = config(RedlockOptions {
            extend: Some((3_000, ExtendMode::Script)),
            ..preset("redis-docs")
        });
        cfg.resource = Some(RESOURCE);
        let mut h = Harness::new(cfg);
        let out = attempt(&mut h, 5, MS);
        let read_id = out
            .iter()
            .find_map(|o| match o {
                Output::Send {
                    to: RESOURCE,
                    msg: Msg::ResourceRead { id, token: None },
                } => Some(*id),
                _ => None,
            })
            .unwrap();
        h.resource_ack(read_id, 7);
        let reqs = requests(&h.advance(3_000 * MS));
        assert_eq!(reqs.len(), 5);
        let mut out = Vec::new();
        for (i, r) in reqs.iter().enumerate() {
            out.extend(h.reply(r, Reply::Int(i64::from(i < 2))));
        }
        assert_eq!(
            observations(&out),
            vec![Observation::Lost {
                lock: 0,
                token: Bytes::from("c1-1"),
                reason: "extend failed",
            }]
        );
        let unlocks = requests(&out);
        assert_eq!(unlocks.len(), 5);
        assert!(unlocks.iter().all(|r| is_unlock(&r.cmd, b"c1-1")));
        // The hold timer is stale: no write follows.
        let later = h.advance(10_000 * MS);
        assert!(!later.iter().any(|o| matches!(
            o,
            Output::Send {
                msg: Msg::ResourceWrite { .. },
                ..
            }
        )));
    }

    #[test]
    fn a_careful_caller_gives_the_lock_up_when_its_validity_runs_out() {
        // Replies after 9 s: validity 10 s − 9 s − 102 ms = 898 ms, far below the 5 s hold.
        let options = RedlockOptions {
            per_node_timeout_ms: 15_000,
            stop_at_validity: true,
            ..preset("redis-docs")
        };
        let mut h = Harness::new(config(options.clone()));
        let out = attempt(&mut h, 5, 9_000 * MS);
        assert!(matches!(
            observations(&out)[..],
            [Observation::Acquired {
                validity_ns: Some(898_000_000),
                ..
            }]
        ));
        assert!(h.advance(897 * MS).is_empty());
        let out = h.advance(MS);
        assert_eq!(
            observations(&out),
            vec![Observation::Lost {
                lock: 0,
                token: Bytes::from("c1-1"),
                reason: "validity ran out",
            }]
        );
        let unlocks = requests(&out);
        assert_eq!(unlocks.len(), 5);
        assert!(unlocks.iter().all(|r| is_unlock(&r.cmd, b"c1-1")));
        // Without the option the client works on for its whole hold (`redlock-pause-after-acquire`).
        let mut h = Harness::new(config(RedlockOptions {
            stop_at_validity: false,
            ..options
        }));
        attempt(&mut h, 5, 9_000 * MS);
        assert!(observations(&h.advance(4_000 * MS)).is_empty());
    }

    #[test]
    fn re_set_extend_sends_set_px_without_nx() {
        let mut h = Harness::new(config(RedlockOptions {
            extend: Some((3_000, ExtendMode::ReSet)),
            ..preset("redis-docs")
        }));
        let reqs = acquire_then_extend(&mut h);
        assert!(
            reqs.iter()
                .all(|r| matches!(&r.cmd, Command::Set { cond: None,
            expiry: Some(SetExpiry::Px(10_000)), value, .. } if &value[..] == b"c1-1"))
        );
        let mut out = Vec::new();
        for r in &reqs[..3] {
            out.extend(h.reply(r, Reply::Ok));
        }
        out.extend(h.advance(100 * MS));
        assert!(matches!(
            observations(&out)[..],
            [Observation::Extended { .. }]
        ));
    }

    /// node-redlock#313: v5's `release()` runs `_execute` (5.0.0-beta.2 src/index.ts:350-364,
    /// 438-467), so an unlock answered 0 (the key expired) is tried `retry_count` attempts
    /// in all before the call returns; the generic unlock returns after one.
    #[test]
    fn node_redlock_v5_retries_the_release_of_an_expired_lock_and_returns_only_after_its_attempts()
    {
        for (name, attempts) in [
            ("node-redlock", 3),
            ("node-redlock-4", 1),
            ("redis-docs", 1),
        ] {
            let mut h = Harness::new(config(RedlockOptions {
                retry_count: 3,
                ..preset(name)
            }));
            attempt(&mut h, 5, MS);
            // The hold ends: the unlock call starts (a millisecond at a time, so that no
            // deadline passes unanswered).
            let mut out = h.advance(4_990 * MS);
            while requests(&out).is_empty() {
                out = h.advance(MS);
            }
            assert_eq!(facts(&out), vec![Fact::UnlockCalled { lock: 0 }], "{name}");
            let mut sent = 0;
            loop {
                let reqs = requests(&out);
                assert_eq!(
                    reqs.len(),
                    5,
                    "{name}: an unlock attempt goes to every node"
                );
                sent += 1;
                let mut answered = Vec::new();
                for r in &reqs {
                    // The key expired everywhere: the release script deletes nothing.
                    answered.extend(h.reply(r, Reply::Int(0)));
                }
                if facts(&answered).contains(&Fact::UnlockReturned { lock: 0 }) {
                    break;
                }
                assert!(requests(&answered).is_empty());
                // The retry delay (200 ± 100 ms) sends the next attempt.
                out = h.advance(99 * MS);
                while requests(&out).is_empty() {
                    out = h.advance(MS);
                }
            }
            assert_eq!(sent, attempts, "{name}");
        }
    }

    #[test]
    fn the_critical_section_reads_holds_writes_then_releases_on_all_nodes() {
        let mut cfg = config(preset("redis-docs"));
        cfg.resource = Some(RESOURCE);
        cfg.rounds = Some(1);
        let mut h = Harness::new(cfg);
        let out = attempt(&mut h, 3, MS);
        let read_id = out
            .iter()
            .find_map(|o| match o {
                Output::Send {
                    msg: Msg::ResourceRead { id, .. },
                    ..
                } => Some(*id),
                _ => None,
            })
            .unwrap();
        h.advance(MS);
        h.resource_ack(read_id, 41);
        // A 60 s pause (longer than the TTL) after acquiring: the write still goes out when
        // the client resumes, without any re-check of validity (`redlock-pause-after-acquire`).
        h.mono_ns += 60_000 * MS;
        let out = h.advance(0);
        let write = out.iter().find_map(|o| match o {
            Output::Send {
                msg: Msg::ResourceWrite {
                    id, base_version, ..
                },
                ..
            } => Some((*id, *base_version)),
            _ => None,
        });
        let (write_id, base) = write.unwrap();
        assert_eq!(base, 41);
        let out = h.resource_ack(write_id, 42);
        assert_eq!(
            observations(&out),
            vec![Observation::Released {
                lock: 0,
                token: Bytes::from("c1-1")
            }]
        );
        let unlocks = requests(&out);
        assert!(unlocks.iter().all(|r| is_unlock(&r.cmd, b"c1-1")) && unlocks.len() == 5);
        // Three nodes answer, two never do: the deadline ends the wait, then think; one
        // round was asked for, so the client is done.
        for r in &unlocks[..3] {
            h.reply(r, Reply::Int(1));
        }
        let out = h.advance(10_000 * MS);
        assert!(requests(&out).is_empty() && observations(&out).is_empty());
        assert_eq!(h.client.phase, Phase::Done);
    }

    #[test]
    fn replies_handled_after_the_deadline_do_not_count() {
        // The client was paused: replies sent in time are handled 60 ms after t0.
        let mut h = Harness::new(config(preset("redis-docs")));
        let reqs = requests(&h.start());
        h.mono_ns += 60 * MS;
        let mut out = Vec::new();
        for r in &reqs {
            out.extend(h.reply(r, Reply::Ok));
        }
        assert_eq!(acquired_validity(&out), None);
        assert_eq!(requests(&out).len(), 5, "unlock sent");
    }

    #[test]
    fn a_restart_starts_a_new_round_with_a_fresh_token_and_ignores_old_replies() {
        let mut h = Harness::new(config(preset("redis-docs")));
        let old = requests(&h.start());
        h.client.on_restart(false);
        h.timers.clear();
        let out = h.start();
        assert_eq!(
            observations(&out),
            vec![Observation::Attempt {
                lock: 0,
                token: Bytes::from("c1-2")
            }]
        );
        let new = requests(&out);
        for r in &old {
            assert!(h.reply(r, Reply::Ok).is_empty());
        }
        let mut out = Vec::new();
        for r in &new {
            out.extend(h.reply(r, Reply::Ok));
        }
        assert!(acquired_validity(&out).is_some());
    }

    #[test]
    fn presets_exist_and_validate() {
        for name in presets::REDLOCK {
            let o = preset(name);
            assert_eq!(o.validate(), Ok(()), "{name}");
            assert_eq!(o.extend, None);
        }
        assert_eq!(presets::redlock("nope", 10_000), None);
        assert_eq!(preset("redis-docs").drift_ns(), 102 * MS);
        assert_eq!(preset("redsync").drift_ns(), 100 * MS);
        assert_eq!(preset("redsync").per_node_timeout_ms, 500);
    }

    /// A round of `n` failed attempts (a minority each), then a won one: the outputs of the
    /// win. Each attempt's replies come 1 ms after it starts.
    fn win_after_failures(h: &mut Harness, failures: usize) -> Vec<Output> {
        let mut out = h.start();
        for _ in 0..failures {
            let reqs = requests(&out);
            h.advance(MS);
            let mut replies = Vec::new();
            for (i, r) in reqs.iter().enumerate() {
                let reply = grant(h, i < 2);
                replies.extend(h.reply(r, reply));
            }
            let (delay, _) = state_timers(&replies)[0];
            out = h.advance(delay);
        }
        let reqs = requests(&out);
        h.advance(MS);
        let mut replies = Vec::new();
        for r in &reqs {
            let reply = grant(h, true);
            replies.extend(h.reply(r, reply));
        }
        replies
    }

    #[test]
    fn node_redlock_beta2_returns_a_lock_won_after_retries_already_expired_and_never_extends_it() {
        // 5.0.0-beta.2 index.ts:305, 328: expiration = start-before-retries + 2000 − 22 ms.
        // Ten failed attempts ≥ 100 ms apart: the win comes > 1 s after `start`.
        let mut cfg = config(preset("node-redlock-using"));
        cfg.options = presets::redlock("node-redlock-using", 1_000).unwrap();
        let mut h = Harness::new(cfg);
        let out = win_after_failures(&mut h, 10);
        assert_eq!(acquired_validity(&out), Some(0), "already expired");
        // queue() fires at once (1 ms); extend() throws before sending (:380-383).
        let timers = state_timers(&out);
        assert!(timers.iter().any(|t| t.0 == MS), "{timers:?}");
        let later = h.advance(MS);
        assert!(requests(&later).is_empty(), "no extend is sent");
        assert!(observations(&later).is_empty(), "the routine is not told");
        // On master the same round gets the winning attempt's validity, and an extension
        // 500 ms before it runs out.
        let mut cfg = config(preset("node-redlock-using-head"));
        cfg.options = presets::redlock("node-redlock-using-head", 1_000).unwrap();
        let mut h = Harness::new(cfg);
        let out = win_after_failures(&mut h, 10);
        let v = acquired_validity(&out).unwrap();
        assert_eq!(v, 1_000 * MS - MS - 12 * MS, "ttl − 1 ms − (10 + 2) ms");
        assert!(state_timers(&out).iter().any(|t| t.0 == v - 500 * MS));
        let ext = requests(&h.advance(v - 500 * MS));
        assert_eq!(ext.len(), 5);
        assert!(ext.iter().all(
            |r| matches!(&r.cmd, Command::Eval { script: ScriptRef::Source(s), .. }
            if &s.source[..] == node_redlock::EXTEND_5_SRC.as_bytes())
        ));
    }

    #[test]
    fn a_using_routine_that_checks_its_signal_reports_lost_when_extension_is_impossible() {
        let mut o = presets::redlock("node-redlock-using", 1_000).unwrap();
        o.auto_extend = Some(AutoExtend {
            threshold_ms: 500,
            routine_checks_signal: true,
        });
        let mut cfg = config(o.clone());
        cfg.options = o;
        let mut h = Harness::new(cfg);
        win_after_failures(&mut h, 10);
        let out = h.advance(MS);
        assert!(matches!(
            observations(&out)[..],
            [Observation::Lost {
                reason: "extend failed",
                ..
            }]
        ));
    }

    #[test]
    fn with_fail_fast_redsync_decides_at_a_quorum_without_waiting_for_the_rest() {
        // mutex.go:304-314: `if n >= m.quorum { return n, err }`.
        let run = |fail_fast: bool| {
            let mut h = Harness::new(config(RedlockOptions {
                fail_fast,
                ..preset("redsync")
            }));
            let reqs = requests(&h.start());
            h.advance(MS);
            let mut out = Vec::new();
            for r in &reqs[..3] {
                out.extend(h.reply(r, Reply::Ok));
            }
            acquired_validity(&out)
        };
        assert_eq!(run(true), Some(10_000 * MS - MS - 100 * MS));
        assert_eq!(run(false), None, "without it, it waits for the other two");
    }

    #[test]
    fn redlock_py_1_0_8_raises_without_unlocking_when_a_node_errs_in_a_won_attempt() {
        // __init__.py:110-112: quorum and validity, but redis_errors: raise, no unlock.
        let mut h = Harness::new(config(preset("redlock-py-1.0.8")));
        let reqs = requests(&h.start());
        h.advance(MS);
        let mut out = Vec::new();
        for (i, r) in reqs.iter().enumerate() {
            let reply = match i {
                0..=2 => Reply::Ok,
                3 => Reply::Error("LOADING Redis is loading the dataset in memory".into()),
                _ => Reply::Nil,
            };
            out.extend(h.reply(r, reply));
        }
        assert_eq!(observations(&out), vec![Observation::GaveUp { lock: 0 }]);
        assert!(
            requests(&out).is_empty(),
            "no unlock: the three keys stay until their TTL"
        );
        // "redlock-py" (the name models use) takes the same attempt as a success.
        let mut h = Harness::new(config(preset("redlock-py")));
        let reqs = requests(&h.start());
        h.advance(MS);
        let mut out = Vec::new();
        for (i, r) in reqs.iter().enumerate() {
            let reply = match i {
                0..=2 => Reply::Ok,
                3 => Reply::Error("LOADING Redis is loading the dataset in memory".into()),
                _ => Reply::Nil,
            };
            out.extend(h.reply(r, reply));
        }
        assert!(acquired_validity(&out).is_some());
    }

    /// A node killed with its host up resets its connections (`Refused { id: 0 }`): the
    /// request in flight to that node fails at once, as a refusal of it would; a node that
    /// already answered keeps its vote.
    #[test]
    fn a_connection_reset_by_a_killed_node_fails_that_nodes_pending_request_only() {
        let mut h = Harness::new(config(preset("redis-docs")));
        let reqs = requests(&h.start());
        h.advance(MS);
        h.reply(&reqs[0], Reply::Ok);
        let reset = |h: &mut Harness, from: ProcId| {
            h.run(|c, cx| c.on_message(cx, from, Msg::Refused { id: 0 }))
        };
        reset(&mut h, reqs[0].to);
        reset(&mut h, reqs[1].to);
        reset(&mut h, reqs[1].to);
        assert_eq!(
            h.client.tally,
            Tally {
                pending: 3,
                yes: 1,
                no: 0,
                failed: 1
            }
        );
    }

    /// The tally kept beside the votes counts them as a recount does, whatever the answers:
    /// OK, nil, an error, a refused connection, a stale reply, an extend's answers.
    #[test]
    fn the_vote_tally_counts_the_votes_after_every_answer() {
        let check = |h: &Harness, when: &str| {
            assert_eq!(h.client.tally, Tally::of(&h.client.votes), "{when}");
        };
        let mut h = Harness::new(config(RedlockOptions {
            extend: Some((3_000, ExtendMode::SetIfMissing)),
            ..preset("redis-docs")
        }));
        let reqs = requests(&h.start());
        check(&h, "sent");
        assert_eq!(h.client.tally.pending, 5);
        h.advance(MS);
        h.reply(&reqs[0], Reply::Nil);
        check(&h, "nil");
        h.reply(&reqs[1], Reply::Error("ERR x".into()));
        check(&h, "error");
        let (from, id) = (reqs[2].to, reqs[2].id);
        h.run(|c, cx| c.on_message(cx, from, Msg::Refused { id }));
        check(&h, "refused");
        h.reply(&reqs[1], Reply::Ok);
        check(&h, "a second answer from one node");
        h.reply(&reqs[3], Reply::Ok);
        check(&h, "ok");
        assert_eq!(
            h.client.tally,
            Tally {
                pending: 1,
                yes: 1,
                no: 1,
                failed: 2
            }
        );
        // The deadline decides with one vote pending: failed, retried later.
        h.advance(100 * MS);
        check(&h, "deadline");
        // A won attempt, then the extend.
        let mut h = Harness::new(config(RedlockOptions {
            extend: Some((3_000, ExtendMode::SetIfMissing)),
            ..preset("redis-docs")
        }));
        let reqs = acquire_then_extend(&mut h);
        check(&h, "extend sent");
        h.advance(MS);
        for (r, reply) in reqs
            .iter()
            .zip([Reply::Int(1), Reply::Int(0), Reply::Int(1)])
        {
            h.reply(r, reply);
            check(&h, "extend answered");
        }
        assert_eq!(
            h.client.tally,
            Tally {
                pending: 2,
                yes: 2,
                no: 1,
                failed: 0
            }
        );
    }

    /// `unlock_args` is written in place only when no message holds it: an unlock still in
    /// flight keeps the token it was sent with when the next attempt unlocks with its own.
    #[test]
    fn an_unlock_in_flight_keeps_its_token_and_a_finished_one_lends_its_arguments() {
        let mut h = Harness::new(config(preset("redis-docs")));
        let fail = |h: &mut Harness, reqs: &[Req]| {
            let mut out = Vec::new();
            for r in reqs {
                out.extend(h.reply(r, Reply::Nil));
            }
            requests(&out)
        };
        // The next attempt's requests, when its retry timer fires (within 200 ms).
        let next = |h: &mut Harness| loop {
            let reqs = requests(&h.advance(MS));
            if !reqs.is_empty() {
                return reqs;
            }
        };
        let first = requests(&h.start());
        let unlocks_1 = fail(&mut h, &first);
        assert_eq!(unlocks_1.len(), 5);
        assert!(unlocks_1.iter().all(|r| is_unlock(&r.cmd, b"c1-1")));
        let second = next(&mut h);
        assert!(second.iter().all(|r| is_set_nx_px(&r.cmd, b"c1-2")));
        let args_1 = Arc::as_ptr(&h.client.unlock_args);
        let unlocks_2 = fail(&mut h, &second);
        assert_ne!(
            Arc::as_ptr(&h.client.unlock_args),
            args_1,
            "held: made afresh"
        );
        assert!(unlocks_2.iter().all(|r| is_unlock(&r.cmd, b"c1-2")));
        assert!(
            unlocks_1.iter().all(|r| is_unlock(&r.cmd, b"c1-1")),
            "the first unlocks, still held, kept their token"
        );
        // Nothing holds the arguments any more: the third unlock writes them in place.
        drop((unlocks_1, unlocks_2));
        let third = next(&mut h);
        let args_2 = Arc::as_ptr(&h.client.unlock_args);
        let unlocks_3 = fail(&mut h, &third);
        assert_eq!(
            Arc::as_ptr(&h.client.unlock_args),
            args_2,
            "written in place"
        );
        assert_eq!(unlocks_3.len(), 5);
        assert!(unlocks_3.iter().all(|r| is_unlock(&r.cmd, b"c1-3")));
    }

    /// Replies are matched by request id and node (node `i` got `first_id + i`): a reply
    /// carrying another node's id counts for neither node.
    #[test]
    fn a_reply_counts_only_from_the_node_its_request_went_to() {
        let mut h = Harness::new(config(preset("redis-docs")));
        let reqs = requests(&h.start());
        h.advance(MS);
        for r in [&reqs[4], &reqs[3]] {
            assert!(acquired_validity(&h.reply(r, Reply::Ok)).is_none());
        }
        // Node 0 answers with node 2's request id: not node 2's answer, nor node 0's.
        let forged = Req {
            to: reqs[0].to,
            id: reqs[2].id,
            cmd: reqs[2].cmd.clone(),
        };
        assert!(acquired_validity(&h.reply(&forged, Reply::Ok)).is_none());
        for r in [&reqs[0], &reqs[1]] {
            assert!(
                acquired_validity(&h.reply(r, Reply::Nil)).is_none(),
                "node 2 has not answered yet"
            );
        }
        assert!(acquired_validity(&h.reply(&reqs[2], Reply::Ok)).is_some());
    }
}

#[cfg(test)]
mod library_tests {
    //! The presets as shipped, each test named for what the library's source says.
    use super::*;
    use crate::client::presets;

    const MS: u64 = NS_PER_MS;

    fn preset(name: &str, ttl_ms: u64) -> RedlockOptions {
        presets::redlock(name, ttl_ms).unwrap()
    }

    #[test]
    fn redsync_defaults_are_8s_expiry_32_tries_50_to_250ms_drift_1pct_timeout_5pct() {
        // redsync.go:12-13, 32-39 at v4.17.0; with its default 8 s expiry.
        let o = preset("redsync", 8_000);
        assert_eq!(o.retry_count, 32);
        assert_eq!(
            (
                o.retry_delay_ms - o.retry_jitter_ms,
                o.retry_delay_ms + o.retry_jitter_ms
            ),
            (50, 250)
        );
        assert_eq!(o.drift_ns(), 80 * MS, "8 s · 0.01, no +2 ms (mutex.go:115)");
        assert_eq!(o.per_node_timeout_ms, 400, "8 s · 0.05 (mutex.go:107)");
        assert_eq!(o.clock, ElapsedClock::Monotonic);
        assert!(!o.fail_fast && o.extend.is_none(), "options are opt-in");
    }

    #[test]
    fn node_redlock_using_copies_beta2_early_start_and_500ms_threshold_and_head_does_not() {
        let beta = preset("node-redlock-using", 2_000);
        assert!(beta.start_before_retries);
        assert_eq!(
            beta.auto_extend,
            Some(AutoExtend {
                threshold_ms: 500,
                routine_checks_signal: false
            })
        );
        assert_eq!(
            beta.retry_count, 11,
            "retryCount 10 + 1 (index.ts:107, 434)"
        );
        assert!(beta.skip_validity_check);
        let head = preset("node-redlock-using-head", 2_000);
        assert!(!head.start_before_retries);
        assert_eq!(head.auto_extend, beta.auto_extend);
        // The plain preset keeps its meaning (acquire() only).
        let plain = preset("node-redlock", 2_000);
        assert!(!plain.start_before_retries && plain.auto_extend.is_none());
        // index.ts:693-697: duration must exceed the threshold by 100 ms.
        assert!(preset("node-redlock-using", 700).validate().is_ok());
        assert!(
            presets::redlock("node-redlock-using", 599)
                .unwrap()
                .validate()
                .is_err()
        );
    }

    #[test]
    fn redlock_py_1_0_8_raises_on_node_errors_and_redlock_py_keeps_its_meaning() {
        assert!(preset("redlock-py-1.0.8", 10_000).raise_on_node_error);
        assert!(!preset("redlock-py", 10_000).raise_on_node_error);
        let (a, b) = (
            preset("redlock-py-1.0.8", 10_000),
            preset("redlock-py", 10_000),
        );
        assert_eq!(
            RedlockOptions {
                raise_on_node_error: false,
                ..a
            },
            b
        );
    }
}
