//! Single-instance lock clients: the algorithms people run against one Redis node.
//!
//! Each client is a work loop: acquire → critical section (read the resource, hold, write
//! it) → release → think → repeat. Algorithms differ only in how they acquire and release:
//!
//! | algorithm | acquire | release |
//! |---|---|---|
//! | `setnx-no-ttl` | `SETNX key token` | `DEL key` |
//! | `set-px-del` | `SET key token NX PX ttl` | `DEL key` |
//! | `set-px-get-del` | `SET key token NX PX ttl` | `GET key`, compare in the client, `DEL key` |
//! | `set-px-cad` | `SET key token NX PX ttl` | compare-and-delete script |
//! | `set-px-cad-fencing` | as `set-px-cad`, then `INCR fence-key` for a fencing token | script |
//! | `redis-py` | redis-py `Lock`: `SET key token NX` (`PX timeout` only with a timeout) | its release script by EVALSHA, `SCRIPT LOAD` on NOSCRIPT |
//!
//! `redis-py` is `set-px-cad` with redis-py's own options (client/redis_py.rs): it is not an
//! `Algorithm` of its own because the model format gives it fields of its own.

use std::sync::Arc;

use crate::client::redis_py::{self, RedisPyOptions, Refresh, SharedToken};
use crate::client::section::{Section, SectionHost, Stage};
use crate::client::timeout::RequestTimeout;
use crate::client::timer::Timer;
use crate::history::Observation;
use crate::process::{Cx, Process};
use crate::proto::command::{ScriptRef, SetCond, SetExpiry};
use crate::proto::reply::NOSCRIPT;
use crate::proto::scripts::UNLOCK_SRC;
use crate::proto::sentinel::{SentinelRequest, SentinelResponse};
use crate::proto::{Bytes, Command, Msg, Reply, Script};
use crate::time::{NS_PER_MS, ProcId};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    SetnxNoTtl,
    SetPxDel,
    SetPxGetDel,
    SetPxCad,
    SetPxCadFencing,
    /// `set-px-cad` that also waits for replicas (`WAIT n timeout`) before believing it holds
    /// the lock, and gives it back if too few acked.
    SetPxWaitCad,
}

impl Algorithm {
    pub const ALL: [Algorithm; 6] = [
        Algorithm::SetnxNoTtl,
        Algorithm::SetPxDel,
        Algorithm::SetPxGetDel,
        Algorithm::SetPxCad,
        Algorithm::SetPxCadFencing,
        Algorithm::SetPxWaitCad,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::SetnxNoTtl => "setnx-no-ttl",
            Algorithm::SetPxDel => "set-px-del",
            Algorithm::SetPxGetDel => "set-px-get-del",
            Algorithm::SetPxCad => "set-px-cad",
            Algorithm::SetPxCadFencing => "set-px-cad-fencing",
            Algorithm::SetPxWaitCad => "set-px-wait-cad",
        }
    }
    pub fn from_name(s: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.name() == s)
    }
    fn has_ttl(self) -> bool {
        self != Algorithm::SetnxNoTtl
    }
}

pub use crate::client::timer::NsRange;

#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub algorithm: Algorithm,
    /// Index of the lock in the model's lock table (history names locks by index).
    pub lock: u32,
    pub key: Bytes,
    pub redis: ProcId,
    pub resource: Option<ProcId>,
    pub ttl_ms: u64,
    /// Time spent in the critical section between reading and writing the resource.
    pub hold: NsRange,
    /// Time between a release and the next attempt.
    pub think: NsRange,
    /// Delay before retrying a failed attempt.
    pub retry: NsRange,
    /// A request with no reply after this long counts as failed.
    pub request_timeout_ns: u64,
    /// Attempts per acquisition before giving up (then think and start over); None = forever.
    pub max_attempts: Option<u32>,
    /// Stop after this many completed critical sections (None = run until the end).
    pub rounds: Option<u64>,
    pub fence_key: Bytes,
    /// Prefix of this client's tokens (unique per client); the attempt number follows.
    pub token_prefix: String,
    /// Sentinels to ask for the current master (empty: talk to `redis` only). The client
    /// asks at start and after an error or a timeout — not otherwise, so a client cut off
    /// with an old master keeps using it, as real clients do.
    pub sentinels: Vec<ProcId>,
    /// `set-px-wait-cad`: replicas to wait for, and WAIT's timeout.
    pub wait_replicas: u32,
    pub wait_timeout_ms: u64,
    /// redis-py's `Lock` (the `redis-py` algorithm, run as `set-px-cad` with these
    /// options); None for every other algorithm.
    pub redis_py: Option<RedisPyOptions>,
    /// A registered algorithm's own fields (the group's `options: (...)`), checked against
    /// the algorithm's type when the model was read; None for every built-in algorithm.
    pub options: Option<ron::Value>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// Waiting for a sentinel to name the master.
    Discovering,
    /// `set-px-wait-cad`: waiting for WAIT's answer.
    AwaitingReplicas,
    /// Giving back a lock taken without enough replica acks (unlock script in flight).
    Abandoning,
    /// Waiting for the reply to SET/SETNX.
    Acquiring,
    /// Waiting for INCR (fencing token).
    Fencing,
    /// In the critical section; `Section::stage` says where.
    Section,
    /// GET-then-DEL: waiting for the GET.
    ReleaseGet,
    /// Waiting for the reply to DEL / the unlock script.
    Releasing,
    /// redis-py: the release script's EVALSHA said NOSCRIPT; `SCRIPT LOAD` in flight, then
    /// EVALSHA again (redis-py's `Script.__call__`).
    LoadingScript,
    /// redis-py: a timed-out command waits out its retry backoff (`py_retry` holds it).
    CommandBackoff,
    /// Think or retry timer armed.
    Waiting,
    Done,
}

/// One lock client.
#[derive(Clone, Debug)]
pub struct LockClient {
    pub config: ClientConfig,
    phase: Phase,
    // Invariant: a step timer whose generation differs from `timer_gen` is stale and ignored.
    timer_gen: u64,
    /// Id of the request whose reply the current phase waits for.
    pending_id: u64,
    next_id: u64,
    attempt: u64,
    attempts_this_round: u32,
    section: Section,
    token: Bytes,
    fence: Option<u64>,
    unlock: Script,
    /// The unlock script's KEYS (`[config.key]`), made once: every unlock shares them (see
    /// `script_keys()`).
    script_keys: Arc<[Bytes]>,
    /// The unlock script's ARGV (`[token]` of the last unlock sent; see
    /// `send_unlock_script()`).
    unlock_args: Arc<[Bytes]>,
    /// EVALSHA failed with NOSCRIPT: send the full script from now on (until restart).
    use_eval: bool,
    // Invariant: `token` spells `token_prefix-token_attempt` (0: no token made yet).
    token_attempt: u64,
    /// Monotonic deadline of the request in flight, if any.
    deadline_mono_ns: Option<u64>,
    /// The node this client sends commands to (the master as last learnt).
    redis: ProcId,
    /// Ask a sentinel for the master before the next attempt.
    need_discovery: bool,
    /// Which sentinel to ask next (round robin).
    sentinel_next: usize,
    timeout: RequestTimeout,
    /// redis-py: the release and refresh scripts (EVALSHA, SCRIPT LOAD on NOSCRIPT).
    py_scripts: Option<PyScripts>,
    /// redis-py: the extend/reacquire request in flight beside the section, if any.
    refresh: RefreshState,
    // Invariant: a background (refresh) timer whose generation differs is stale.
    refresh_gen: u64,
    /// When the current acquisition round started (monotonic), for `blocking_timeout`.
    round_start_mono_ns: u64,
    /// redis-py: the token the release in flight was sent with (EVALSHA again after a
    /// SCRIPT LOAD sends the same one).
    py_release_token: Bytes,
    /// redis-py: the command in flight, the phase awaiting it and its failures so far.
    py_retry: Option<(Phase, Command, u32)>,
}

/// redis-py's registered scripts (lock.py:157-165).
#[derive(Clone, Debug)]
struct PyScripts {
    release: Script,
    extend: Script,
    reacquire: Script,
}

/// redis-py's refresh (extend or reacquire), which runs beside the critical section with its
/// own request ids: the section's resource requests keep `pending_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefreshState {
    Idle,
    /// The script's EVALSHA (or EVALSHA again after a load) is in flight.
    Script(u64),
    /// NOSCRIPT came back: `SCRIPT LOAD` is in flight.
    Loading(u64),
}

/// `prefix-n` as bytes, without the formatting machinery (this runs once per attempt).
pub fn token_bytes(prefix: &str, n: u64) -> Bytes {
    // Built in a stack buffer and copied once (prefixes are short names).
    let mut buf = [0u8; 64];
    let p = prefix.len().min(buf.len() - 21);
    buf[..p].copy_from_slice(&prefix.as_bytes()[..p]);
    buf[p] = b'-';
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let d = digits.len() - i;
    buf[p + 1..p + 1 + d].copy_from_slice(&digits[i..]);
    Bytes::from_slice(&buf[..p + 1 + d])
}

/// Makes `token`, which spells `prefix-token_attempt`, spell `prefix-attempt`: counted up in
/// place when the attempt is the next one (the usual case: tokens are made once per attempt,
/// the hot path of a contended lock), rendered afresh otherwise. No clone of the token and
/// no division per digit.
// Always inlined: left to itself the compiler stops inlining it as the crate changes (a call
// and its frame, ~35 instructions an attempt on W1).
#[inline(always)]
pub fn advance_token(token: &mut Bytes, token_attempt: &mut u64, prefix: &str, attempt: u64) {
    let digits_start = prefix.len() + 1;
    if *token_attempt + 1 != attempt || token.len() < digits_start {
        *token = token_bytes(prefix, attempt);
    } else {
        token.increment_decimal(digits_start);
    }
    *token_attempt = attempt;
    debug_assert_eq!(*token, token_bytes(prefix, attempt));
}

impl LockClient {
    pub fn new(config: ClientConfig) -> LockClient {
        let (redis, need_discovery) = (config.redis, !config.sentinels.is_empty());
        let script_keys = Arc::new([config.key.clone()]);
        let section = Section::new(
            config.lock,
            config.resource,
            config.hold,
            config.think,
            config.rounds,
        );
        LockClient {
            config,
            phase: Phase::Idle,
            timer_gen: 0,
            pending_id: 0,
            next_id: 1,
            attempt: 0,
            attempts_this_round: 0,
            section,
            token: Bytes::new(),
            fence: None,
            unlock: Script::new(UNLOCK_SRC.as_bytes()),
            script_keys,
            unlock_args: Arc::new([Bytes::new()]),
            use_eval: false,
            deadline_mono_ns: None,
            timeout: RequestTimeout::default(),
            token_attempt: 0,
            redis,
            need_discovery,
            sentinel_next: 0,
            py_scripts: None,
            refresh: RefreshState::Idle,
            refresh_gen: 0,
            round_start_mono_ns: 0,
            py_release_token: Bytes::new(),
            py_retry: None,
        }
        .with_redis_py()
    }

    fn with_redis_py(mut self) -> LockClient {
        if let Some(o) = &self.config.redis_py {
            if let Err(e) = o.validate() {
                panic!("{e}");
            }
            self.py_scripts = Some(PyScripts {
                release: Script::new(redis_py::RELEASE_SRC.as_bytes()),
                extend: Script::new(redis_py::EXTEND_SRC.as_bytes()),
                reacquire: Script::new(redis_py::REACQUIRE_SRC.as_bytes()),
            });
        }
        self
    }

    /// Whether the lock key gets a TTL: every algorithm but `setnx-no-ttl`, and redis-py
    /// only with a `timeout` (lock.py:238-243).
    fn key_ttl_ms(&self) -> Option<u64> {
        match &self.config.redis_py {
            Some(o) => o.timeout_ms,
            None => self
                .config
                .algorithm
                .has_ttl()
                .then_some(self.config.ttl_ms),
        }
    }

    fn arm(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        self.clear_timeout();
        self.timer_gen += 1;
        Timer::Step(self.timer_gen).set(cx, after_ns);
    }

    // Inlined, as `send_request`: the command is built where the message is, not copied into
    // each callee's frame on the way (~30 instructions a request on W1).
    #[inline(always)]
    fn request(&mut self, cx: &mut Cx<'_>, phase: Phase, cmd: Command) {
        if self.py_scripts.is_some() {
            self.keep_for_retry(&phase, &cmd);
        }
        self.send_request(cx, phase, cmd);
    }

    /// redis-py retries a command that timed out: keep it, and count afresh.
    #[cold]
    fn keep_for_retry(&mut self, phase: &Phase, cmd: &Command) {
        self.py_retry = Some((phase.clone(), cmd.clone(), 0));
    }

    #[inline(always)]
    fn send_request(&mut self, cx: &mut Cx<'_>, phase: Phase, cmd: Command) {
        let id = self.next_id;
        self.next_id += 1;
        self.pending_id = id;
        self.phase = phase;
        cx.send(self.redis, Msg::Request { id, cmd });
        self.arm_timeout(cx);
    }

    /// redis-py ≥ 8.0: the command in flight timed out; `Retry.call_with_retry` sends it again
    /// after `min(cap, random() · base · 2^failures)` while `failures <= retries`
    /// (redis/retry.py:117-136, backoff.py:178-179; base 10 ms, cap 1 s, 10 retries,
    /// _defaults.py:37-39). The connection is closed in between, so a late reply to the
    /// first try is dropped (a new request id). Returns whether it will retry.
    fn py_retry_after_timeout(&mut self, cx: &mut Cx<'_>) -> bool {
        let retries = self
            .config
            .redis_py
            .as_ref()
            .map_or(0, |o| o.command_retries);
        let Some((phase, cmd, failures)) = self.py_retry.take() else {
            return false;
        };
        let failures = failures + 1;
        if failures > retries || phase != self.phase {
            return false;
        }
        let exp = redis_py::RETRY_BASE_MS
            .saturating_mul(1u64 << failures.min(40))
            .saturating_mul(NS_PER_MS);
        let backoff = cx
            .rng
            .range_inclusive(0, exp)
            .min(redis_py::RETRY_CAP_MS * NS_PER_MS);
        self.py_retry = Some((phase, cmd, failures));
        self.phase = Phase::CommandBackoff;
        self.arm(cx, backoff);
        true
    }

    fn arm_timeout(&mut self, cx: &mut Cx<'_>) {
        self.deadline_mono_ns = Some(cx.mono_ns + self.config.request_timeout_ns);
        self.timeout.ensure(cx, self.config.request_timeout_ns);
    }

    /// Any state timer supersedes the wait for a reply.
    fn clear_timeout(&mut self) {
        self.deadline_mono_ns = None;
    }

    // Never inlined: its callers reach it by a jump (see `on_timer`).
    #[inline(never)]
    fn start_attempt(&mut self, cx: &mut Cx<'_>) {
        if self.section.finished() {
            self.phase = Phase::Done;
            return;
        }
        if self.need_discovery {
            let sentinel = self.config.sentinels[self.sentinel_next % self.config.sentinels.len()];
            self.sentinel_next += 1;
            let id = self.next_id;
            self.next_id += 1;
            self.pending_id = id;
            self.phase = Phase::Discovering;
            cx.send(
                sentinel,
                Msg::SentinelReq {
                    id,
                    req: SentinelRequest::GetMaster,
                },
            );
            self.arm_timeout(cx);
            return;
        }
        self.attempt += 1;
        self.attempts_this_round += 1;
        // redis-py makes a fresh token per `acquire()` call (lock.py:215), whether or not
        // the Lock object is shared: sharing decides where it is *stored*.
        advance_token(
            &mut self.token,
            &mut self.token_attempt,
            &self.config.token_prefix,
            self.attempt,
        );
        self.fence = None;
        if self.attempts_this_round == 1 {
            self.round_start_mono_ns = cx.mono_ns;
            // One observation per acquisition round, not per retry: checkers need to know
            // since when the lock has been wanted; retries are in the trace.
            cx.observe(Observation::Attempt {
                lock: self.config.lock,
                token: self.token.clone(),
            });
        }
        if self.config.redis_py.is_none()
            && self.config.algorithm.has_ttl()
            && self.config.key.is_inline()
            && self.token.is_inline()
        {
            // `SET key token NX PX ttl`, what every algorithm but two sends, built in its
            // message from inline key and token (`Bytes::clone_inline`): ~25 instructions an
            // attempt less on W1 than the general way's clones. Nothing is kept for a retry
            // (`request`): that is redis-py's alone.
            let id = self.next_id;
            self.next_id += 1;
            self.pending_id = id;
            self.phase = Phase::Acquiring;
            let cmd = Command::Set {
                key: self.config.key.clone_inline(),
                value: self.token.clone_inline(),
                cond: Some(SetCond::Nx),
                get: false,
                expiry: Some(SetExpiry::Px(self.config.ttl_ms as i64)),
            };
            cx.send(self.redis, Msg::Request { id, cmd });
            return self.arm_timeout(cx);
        }
        let key = self.config.key.clone();
        let cmd = match (self.config.redis_py.is_some(), self.key_ttl_ms()) {
            (_, Some(ttl_ms)) => Command::Set {
                key,
                value: self.token.clone(),
                cond: Some(SetCond::Nx),
                get: false,
                expiry: Some(SetExpiry::Px(ttl_ms as i64)),
            },
            // redis-py with `timeout=None`: `set(name, token, nx=True, px=None)`, a SET NX
            // without expiry (lock.py:243).
            (true, None) => Command::Set {
                key,
                value: self.token.clone(),
                cond: Some(SetCond::Nx),
                get: false,
                expiry: None,
            },
            (false, None) => Command::SetNx(key, self.token.clone()),
        };
        self.request(cx, Phase::Acquiring, cmd);
    }

    /// After an error or a timeout the master may have changed: ask a sentinel next time.
    fn suspect_master(&mut self) {
        if !self.config.sentinels.is_empty() {
            self.need_discovery = true;
        }
    }

    fn acquire_failed(&mut self, cx: &mut Cx<'_>) {
        // redis-py: `next_try_at = monotonic() + sleep; if stop_trying_at is not None and
        // next_try_at > stop_trying_at: return False` (lock.py:232-234).
        let blocking_timed_out = self
            .config
            .redis_py
            .as_ref()
            .and_then(|o| o.blocking_timeout_ms)
            .is_some_and(|b| {
                cx.mono_ns + self.config.retry.max > self.round_start_mono_ns + b * NS_PER_MS
            });
        if blocking_timed_out
            || self
                .config
                .max_attempts
                .is_some_and(|m| self.attempts_this_round >= m)
        {
            cx.observe(Observation::GaveUp {
                lock: self.config.lock,
            });
            self.attempts_this_round = 0;
            self.phase = Phase::Waiting;
            let d = self.config.think.draw(cx);
            self.arm(cx, d);
        } else {
            self.phase = Phase::Waiting;
            let d = self.config.retry.draw(cx);
            self.arm(cx, d);
        }
    }

    fn acquired(&mut self, cx: &mut Cx<'_>) {
        self.attempts_this_round = 0;
        let validity_ns = self.key_ttl_ms().map(|t| t * NS_PER_MS);
        if let Some(shared) = self.shared_token() {
            shared.store(self.token.clone());
        }
        cx.observe(Observation::Acquired {
            lock: self.config.lock,
            token: self.token.clone(),
            fence: self.fence,
            validity_ns,
            believed_until: None,
        });
        self.enter_section(cx, self.fence);
        if let Some((every_ms, _)) = self.config.redis_py.as_ref().and_then(|o| o.refresh) {
            self.refresh_gen += 1;
            Timer::Background(self.refresh_gen).set(cx, every_ms * NS_PER_MS);
        }
    }

    /// redis-py: a script by EVALSHA, as `Script.__call__` sends it first (core.py:10936).
    fn py_evalsha(&self, script: &Script, args: Arc<[Bytes]>) -> Command {
        Command::Eval {
            script: ScriptRef::Sha(Some(script.sha)),
            keys: self.script_keys(),
            args,
            read_only: false,
        }
    }

    /// Whether the request in flight (`pending_id`) went to `self.redis`.
    fn awaits_redis(&self) -> bool {
        self.pending_id != 0
            && matches!(
                self.phase,
                Phase::Acquiring
                    | Phase::AwaitingReplicas
                    | Phase::Abandoning
                    | Phase::Fencing
                    | Phase::ReleaseGet
                    | Phase::Releasing
                    | Phase::LoadingScript
            )
    }

    /// redis-py with `thread_local=False`: the group's one token slot.
    /// Whether this client shares its token slot with other members of its group (redis-py
    /// with `thread_local: false`).
    pub fn shares_token(&self) -> bool {
        self.shared_token().is_some()
    }

    fn shared_token(&self) -> Option<&SharedToken> {
        self.config
            .redis_py
            .as_ref()
            .and_then(|o| o.shared_token.as_ref())
    }

    /// The token redis-py's `self.local.token` holds for this thread now.
    fn py_token(&self) -> Option<Bytes> {
        match self.shared_token() {
            Some(shared) => shared.get(),
            None => Some(self.token.clone()),
        }
    }

    /// A release that failed on the network, with `ReleaseError::KeepsToken`: the caller calls
    /// `release()` again `sleep` later, with the token it kept (the same EVALSHA, retried by
    /// the client as any). Returns whether it will.
    fn py_release_again(&mut self, cx: &mut Cx<'_>) -> bool {
        let keeps = self
            .config
            .redis_py
            .as_ref()
            .is_some_and(|o| o.release_error == redis_py::ReleaseError::KeepsToken);
        if !keeps {
            return false;
        }
        let cmd = self.py_release_command(self.py_release_token.clone());
        self.py_retry = Some((Phase::Releasing, cmd, 0));
        self.phase = Phase::CommandBackoff;
        let d = self.config.retry.draw(cx);
        self.arm(cx, d);
        true
    }

    fn py_release_command(&self, token: Bytes) -> Command {
        let s = self.py_scripts.as_ref().expect("redis-py scripts");
        self.py_evalsha(&s.release, Arc::new([token]))
    }

    fn py_refresh_command(&self, token: Bytes) -> Command {
        let s = self.py_scripts.as_ref().expect("redis-py scripts");
        let o = self.config.redis_py.as_ref().expect("redis-py options");
        let (_, refresh) = o.refresh.expect("refresh configured");
        let ms = |v: u64| Bytes::from(v.to_string().as_str());
        match refresh {
            // lock.py:307-311: `args=[token, additional_ms, "1" if replace_ttl else "0"]`.
            Refresh::Extend {
                additional_ms,
                replace_ttl,
            } => self.py_evalsha(
                &s.extend,
                Arc::new([
                    token,
                    ms(additional_ms),
                    Bytes::from(if replace_ttl { "1" } else { "0" }),
                ]),
            ),
            // lock.py:335-338: `args=[token, timeout_ms]`.
            Refresh::Reacquire => self.py_evalsha(
                &s.reacquire,
                Arc::new([token, ms(o.timeout_ms.expect("validated"))]),
            ),
        }
    }

    fn py_script_load(&self, refresh: bool) -> Command {
        let s = self.py_scripts.as_ref().expect("redis-py scripts");
        let script = if !refresh {
            &s.release
        } else {
            match self.config.redis_py.as_ref().and_then(|o| o.refresh) {
                Some((_, Refresh::Reacquire)) => &s.reacquire,
                _ => &s.extend,
            }
        };
        Command::ScriptLoad(Bytes::from_slice(&script.source))
    }

    /// The refresh timer fired: extend or reacquire, if still holding and none in flight.
    fn on_refresh_timer(&mut self, cx: &mut Cx<'_>) {
        if self.phase != Phase::Section || self.section.lost() {
            return;
        }
        if let Some((every_ms, _)) = self.config.redis_py.as_ref().and_then(|o| o.refresh) {
            self.refresh_gen += 1;
            Timer::Background(self.refresh_gen).set(cx, every_ms * NS_PER_MS);
        }
        if self.refresh != RefreshState::Idle {
            return;
        }
        // "Cannot extend an unlocked lock" (lock.py:300-301): another thread of a shared
        // Lock object released it.
        let Some(token) = self.py_token() else {
            self.py_refresh_failed(cx);
            return;
        };
        let id = self.next_id;
        self.next_id += 1;
        self.refresh = RefreshState::Script(id);
        let cmd = self.py_refresh_command(token);
        cx.send(self.redis, Msg::Request { id, cmd });
    }

    fn on_refresh_reply(&mut self, cx: &mut Cx<'_>, reply: Reply) {
        let state = self.refresh;
        self.refresh = RefreshState::Idle;
        if self.phase != Phase::Section || self.section.lost() {
            return;
        }
        match (state, reply) {
            (RefreshState::Script(_), Reply::Error(e)) if e == NOSCRIPT => {
                let id = self.next_id;
                self.next_id += 1;
                self.refresh = RefreshState::Loading(id);
                let cmd = self.py_script_load(true);
                cx.send(self.redis, Msg::Request { id, cmd });
            }
            (RefreshState::Loading(_), Reply::Bulk(_)) => {
                let Some(token) = self.py_token() else {
                    return self.py_refresh_failed(cx);
                };
                let id = self.next_id;
                self.next_id += 1;
                self.refresh = RefreshState::Script(id);
                let cmd = self.py_refresh_command(token);
                cx.send(self.redis, Msg::Request { id, cmd });
            }
            (RefreshState::Script(_), Reply::Int(1)) => {
                cx.observe(Observation::Extended {
                    lock: self.config.lock,
                    token: self.token.clone(),
                    // redis-py returns True and nothing more: an additive extend leaves
                    // the new TTL unknown to the caller.
                    validity_ns: match self.config.redis_py.as_ref().and_then(|o| o.refresh) {
                        Some((
                            _,
                            Refresh::Extend {
                                additional_ms,
                                replace_ttl: true,
                            },
                        )) => Some(additional_ms * NS_PER_MS),
                        Some((_, Refresh::Reacquire)) => self.key_ttl_ms().map(|t| t * NS_PER_MS),
                        _ => None,
                    },
                    believed_until: None,
                });
            }
            // 0: `LockNotOwnedError` (lock.py:315-318, :341-344), raised in the caller's
            // code inside `with lock:`; `__exit__` then releases (and raises again). Any other
            // answer is an error raised the same way.
            _ => self.py_refresh_failed(cx),
        }
    }

    fn py_refresh_failed(&mut self, cx: &mut Cx<'_>) {
        // `LockNotOwnedError`, as the caller learns it; named as every failed extend is.
        self.report_lost(cx, "extend failed");
        match self.section.stage() {
            Stage::Reading => {
                self.pending_id = 0;
                self.clear_timeout();
                self.release(cx);
            }
            Stage::Holding => {
                // The hold timer goes stale.
                self.timer_gen += 1;
                self.release(cx);
            }
            // The write is in flight; its answer (or timeout) leads to the release.
            Stage::Writing | Stage::Outside => {}
        }
    }

    /// `[config.key]`, shared; made afresh only if the (public) config's key was changed.
    fn script_keys(&self) -> Arc<[Bytes]> {
        if self.script_keys[0] == self.config.key {
            self.script_keys.clone()
        } else {
            Arc::new([self.config.key.clone()])
        }
    }

    /// The unlock script, as EVALSHA (or EVAL once a node said NOSCRIPT); `phase` is the one
    /// that waits for its reply (a release, or giving back a lock with too few WAIT acks).
    fn send_unlock_script(&mut self, cx: &mut Cx<'_>, phase: Phase) {
        if self.py_scripts.is_some() {
            // `release()`: `expected_token = self.local.token; self.local.token = None`, then
            // the script (lock.py:269-276). With a shared Lock object the slot holds the
            // token of whichever thread stored last, and may be empty: "Cannot release a lock
            // that's not owned or is already unlocked" (LockError), and nothing is sent.
            let token = match self.shared_token() {
                Some(shared) => shared.take(),
                None => Some(self.token.clone()),
            };
            // `Released` names the token this thread believed it held (the checkers end its
            // holding by it); with a shared Lock object the release may send another
            // thread's, or nothing: the timeline says which.
            if self.shares_token() && token.as_ref() != Some(&self.token) {
                let own = String::from_utf8_lossy(&self.token).into_owned();
                // redis-py lock.py:269-276: `release()` takes `self.local.token`, the slot.
                let note = match &token {
                    Some(t) => format!(
                        "release() sends {}, the shared Lock's token, not its own {own}",
                        String::from_utf8_lossy(t)
                    ),
                    None => format!("release() finds the shared Lock empty: sends nothing ({own})"),
                };
                cx.observe(Observation::Note(note));
            }
            match token {
                Some(t) => {
                    self.py_release_token = t.clone();
                    let cmd = self.py_release_command(t);
                    self.request(cx, phase, cmd);
                }
                None => self.think(cx),
            }
            return;
        }
        let script = if self.use_eval {
            ScriptRef::Source(self.unlock.clone())
        } else {
            ScriptRef::Sha(Some(self.unlock.sha))
        };
        // `[key]` and `[token]` shared with the message, as Redlock's unlock does: the
        // arguments written afresh in place once no message holds them any more, allocated
        // again only while one still does (an allocation and a free less per release).
        if self.script_keys[0] != self.config.key {
            self.script_keys = Arc::new([self.config.key.clone()]);
        }
        // Written without first asking whether it already holds this token: it nearly never
        // does (each attempt has its own), and the comparison cost more than the copy.
        match Arc::get_mut(&mut self.unlock_args) {
            // Inline, the token is copied straight in (`Bytes::clone_inline`).
            Some(args) if self.token.is_inline() => args[0] = self.token.clone_inline(),
            Some(args) => args[0] = self.token.clone(),
            None => self.unlock_args = Arc::new([self.token.clone()]),
        }
        let cmd = Command::Eval {
            script,
            keys: Arc::clone(&self.script_keys),
            args: Arc::clone(&self.unlock_args),
            read_only: false,
        };
        self.request(cx, phase, cmd);
    }

    fn on_reply(&mut self, cx: &mut Cx<'_>, reply: &Reply) {
        match self.phase {
            Phase::Acquiring => match reply {
                Reply::Ok | Reply::Int(1) => match self.config.algorithm {
                    Algorithm::SetPxCadFencing => {
                        let cmd = Command::IncrBy(self.config.fence_key.clone(), 1);
                        self.request(cx, Phase::Fencing, cmd);
                    }
                    Algorithm::SetPxWaitCad => {
                        let cmd = Command::Wait {
                            replicas: i64::from(self.config.wait_replicas),
                            timeout_ms: self.config.wait_timeout_ms as i64,
                        };
                        self.request(cx, Phase::AwaitingReplicas, cmd);
                    }
                    _ => self.acquired(cx),
                },
                Reply::Error(_) => {
                    self.suspect_master();
                    self.acquire_failed(cx);
                }
                _ => self.acquire_failed(cx),
            },
            Phase::AwaitingReplicas => match reply {
                Reply::Int(n) if *n >= i64::from(self.config.wait_replicas) => self.acquired(cx),
                // Too few replicas have the lock: a failover could lose it. Give it back.
                _ => self.send_unlock_script(cx, Phase::Abandoning),
            },
            // As the release path: a node that lost its script cache (a restart) answers
            // EVALSHA with NOSCRIPT, and the key would linger until its TTL.
            Phase::Abandoning if matches!(&reply, Reply::Error(e) if e == NOSCRIPT) => {
                self.use_eval = true;
                self.send_unlock_script(cx, Phase::Abandoning);
            }
            Phase::Abandoning => self.acquire_failed(cx),
            Phase::Fencing => match reply {
                Reply::Int(n) if *n > 0 => {
                    self.fence = Some(*n as u64);
                    self.acquired(cx);
                }
                // No token, no safe write: give the lock back and retry.
                _ => self.give_back(cx),
            },
            Phase::ReleaseGet => {
                if matches!(&reply, Reply::Bulk(v) if v[..] == self.token[..]) {
                    self.request(
                        cx,
                        Phase::Releasing,
                        Command::Del(vec![self.config.key.clone()]),
                    );
                } else {
                    self.think(cx);
                }
            }
            Phase::Releasing
                if self.py_scripts.is_some()
                    && matches!(&reply, Reply::Error(e) if e == NOSCRIPT) =>
            {
                // redis-py's `Script.__call__`: `self.sha = client.script_load(self.script)`,
                // then EVALSHA again (core.py:10937-10942).
                let cmd = self.py_script_load(false);
                self.request(cx, Phase::LoadingScript, cmd);
            }
            Phase::LoadingScript => match reply {
                Reply::Bulk(_) => {
                    let cmd = self.py_release_command(self.py_release_token.clone());
                    self.request(cx, Phase::Releasing, cmd);
                }
                _ => self.think(cx),
            },
            // A 0 is redis-py's `LockNotOwnedError` (lock.py:279-285): the key had expired or
            // was someone else's. The trace has the reply; the caller only gets an exception.
            Phase::Releasing => {
                if matches!(&reply, Reply::Error(e) if e == NOSCRIPT) {
                    // node-redlock and redsync (goredis.go:62-63): EVALSHA, and EVAL on
                    // NOSCRIPT. redis-py's Script instead sends SCRIPT LOAD and EVALSHA again
                    // (commands/core.py:10935-10942).
                    self.use_eval = true;
                    self.send_unlock_script(cx, Phase::Releasing);
                } else {
                    self.think(cx);
                }
            }
            _ => {}
        }
    }

    /// redis-py: the backoff after a timed-out command is over; the command again.
    #[cold]
    fn resend_after_backoff(&mut self, cx: &mut Cx<'_>) {
        let (phase, cmd, _) = self.py_retry.clone().expect("a command to retry");
        self.send_request(cx, phase, cmd);
    }

    /// The reply to the request in flight (`pending_id`).
    #[inline(never)]
    fn on_awaited_reply(&mut self, cx: &mut Cx<'_>, reply: Reply) {
        self.clear_timeout();
        // The commonest reply on a contended lock, a refused SET NX, owns nothing: the retry
        // is a jump, past `on_reply`'s frame (as `on_reply` would: nil is a failed attempt;
        // ~17 instructions a refused SET on W1).
        if self.phase == Phase::Acquiring && matches!(reply, Reply::Nil) {
            // Nil has nothing to drop; left to itself the compiler calls the drop glue.
            std::mem::forget(reply);
            return self.acquire_failed(cx);
        }
        self.on_reply(cx, &reply);
        reply.release();
    }

    /// Every message but the awaited reply (`on_message`'s own case).
    #[inline(never)]
    fn on_other_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        match msg {
            Msg::Reply { id, reply } if matches!(self.refresh, RefreshState::Script(r) | RefreshState::Loading(r) if r == id) =>
            {
                self.on_refresh_reply(cx, reply);
            }
            Msg::SentinelResp {
                id,
                resp: SentinelResponse::Master { master, .. },
            } if id == self.pending_id => {
                self.clear_timeout();
                match master {
                    Some(m) => {
                        self.redis = m;
                        self.need_discovery = false;
                        self.start_attempt(cx);
                    }
                    None => {
                        self.phase = Phase::Waiting;
                        let d = self.config.retry.draw(cx);
                        self.arm(cx, d);
                    }
                }
            }
            Msg::ResourceAck { id, version, .. }
                if id == self.pending_id && self.phase == Phase::Section =>
            {
                self.on_resource_ack(cx, version);
            }
            // A crashed node's host refused the connection: redis-py raises ConnectionError
            // at once, and the client does what it does when the request times out — only
            // now, not `request_timeout` later.
            Msg::Refused { id } if id != 0 && id == self.pending_id => {
                self.clear_timeout();
                self.request_failed(cx);
            }
            // The node was killed with its host up while our request was in flight or parked
            // there (a blocked WAIT): the kernel reset the connection, and the read fails at
            // once (redis-py: ConnectionError) instead of at `request_timeout`.
            Msg::Refused { id: 0 } if from == self.redis && self.awaits_redis() => {
                self.clear_timeout();
                self.request_failed(cx);
            }
            _ => {}
        }
    }

    /// Every timer but a step timer ending a wait (`on_timer`'s own case).
    #[inline(never)]
    fn on_other_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        match Timer::from_tag(tag) {
            Timer::Request => {
                if !self.timeout.expired(cx, self.deadline_mono_ns) {
                    return;
                }
                self.deadline_mono_ns = None;
            }
            Timer::Step(g) if g == self.timer_gen => {}
            Timer::Background(g) if g == self.refresh_gen => {
                self.on_refresh_timer(cx);
                return;
            }
            _ => return,
        }
        self.request_failed(cx);
    }

    /// The request in flight timed out or was refused (or a step timer fired: the phase
    /// says which). redis-py resends a failed command with its backoff first.
    fn request_failed(&mut self, cx: &mut Cx<'_>) {
        self.pending_id = 0;
        // A think or retry timer: the commonest case by far, and the one the checks below
        // all pass by (it is neither a backoff nor a phase redis-py retries in).
        if self.phase == Phase::Waiting {
            return self.start_attempt(cx);
        }
        if self.phase == Phase::CommandBackoff {
            return self.resend_after_backoff(cx);
        }
        if matches!(
            self.phase,
            Phase::Acquiring | Phase::Releasing | Phase::LoadingScript
        ) && self.py_retry_after_timeout(cx)
        {
            return;
        }
        match self.phase {
            Phase::Idle | Phase::Done | Phase::CommandBackoff => {}
            Phase::Acquiring | Phase::Fencing | Phase::AwaitingReplicas | Phase::Abandoning => {
                // Timed out: the SET may have succeeded on the server, but the client cannot
                // know. It retries with a new token (the old key expires with its TTL).
                self.suspect_master();
                self.acquire_failed(cx);
            }
            Phase::Discovering => {
                // That sentinel did not answer: the next attempt asks the next one.
                self.phase = Phase::Waiting;
                let d = self.config.retry.draw(cx);
                self.arm(cx, d);
            }
            Phase::Section => self.on_section_timer(cx),
            Phase::ReleaseGet | Phase::Releasing | Phase::LoadingScript => {
                self.suspect_master();
                if !self.py_release_again(cx) {
                    self.think(cx);
                }
            }
            Phase::Waiting => self.start_attempt(cx),
        }
    }
}

impl SectionHost for LockClient {
    fn section(&mut self) -> &mut Section {
        &mut self.section
    }

    fn token(&self) -> Bytes {
        self.token.clone()
    }

    fn resource_request_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.pending_id = id;
        id
    }

    fn await_resource(&mut self, cx: &mut Cx<'_>, _id: u64) {
        self.arm_timeout(cx);
    }

    fn arm_step(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        self.arm(cx, after_ns);
    }

    fn enter_phase_section(&mut self) {
        self.phase = Phase::Section;
    }

    fn enter_phase_waiting(&mut self) {
        self.phase = Phase::Waiting;
    }

    fn release_lock(&mut self, cx: &mut Cx<'_>) {
        let key = self.config.key.clone();
        match self.config.algorithm {
            Algorithm::SetnxNoTtl | Algorithm::SetPxDel => {
                self.request(cx, Phase::Releasing, Command::Del(vec![key]))
            }
            Algorithm::SetPxGetDel => self.request(cx, Phase::ReleaseGet, Command::Get(key)),
            Algorithm::SetPxCad | Algorithm::SetPxCadFencing | Algorithm::SetPxWaitCad => {
                self.send_unlock_script(cx, Phase::Releasing)
            }
        }
    }

    fn next_attempt(&mut self, cx: &mut Cx<'_>) {
        self.start_attempt(cx);
    }
}

impl Process for LockClient {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        self.start_attempt(cx);
    }

    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        // The awaited reply, nearly every message a client gets, is told apart here and
        // handled out of line, away from the frame the other messages need (~7
        // instructions a reply on W1).
        match msg {
            Msg::Reply { id, reply } if id == self.pending_id => self.on_awaited_reply(cx, reply),
            msg => self.on_other_message(cx, from, msg),
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        // The commonest timer by far: the current step timer ending a retry or think wait.
        // Decided here, in a function with no frame, so that the next attempt is a jump and
        // every other timer goes the general way (~40 instructions a retry on W1). The
        // current generation is a step timer's tag (`Timer::Step` keeps it below the
        // background bit), so this is `request_failed`'s first case exactly.
        if tag == self.timer_gen && self.phase == Phase::Waiting {
            self.pending_id = 0;
            return self.start_attempt(cx);
        }
        self.on_other_timer(cx, tag);
    }

    fn on_restart(&mut self, _keep_data: bool) {
        self.phase = Phase::Idle;
        self.section.abandon();
        self.pending_id = 0;
        // The loop voids timers of the previous incarnation.
        self.timeout.reset();
        self.deadline_mono_ns = None;
        self.attempts_this_round = 0;
        self.use_eval = false;
        self.need_discovery = !self.config.sentinels.is_empty();
        self.refresh = RefreshState::Idle;
        self.py_retry = None;
    }
}

#[cfg(test)]
mod tests;
