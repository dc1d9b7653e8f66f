//! python-redis-lock's `redis_lock.Lock` (PyPI `python-redis-lock`) as shipped, as of v4.0.1
//! (ionelmc/python-redis-lock@59fc29e, tag v4.0.1, the latest release; the lines below are of
//! its src/redis_lock/__init__.py). v4.0.0 (1497012) runs the same protocol: the diff is
//! quoting, `Lock(blocking=)` for `__enter__` and the renewal thread's `demon` typo (:309);
//! from `acquire` on its lines are 6 lower.
//!
//! What the library does, with the lines it does it on:
//! - two keys per lock `name`: `lock:<name>`, a string holding the Lock object's id, and
//!   `lock-signal:<name>`, a list that wakes a waiter (:166-167); the id is drawn once per
//!   `Lock` object (:155-156);
//! - `expire` is whole seconds: `int(expire)` (:146-147), `None` (the default) is no expiry;
//!   `acquire` sends `SET lock:<name> id NX EX expire` (:232);
//! - a busy lock is waited for with `BLPOP lock-signal:<name> t`, `t = timeout or expire or 0`
//!   (:229, :237), then SET again. `acquire(timeout=...)` (whole seconds, :220-221) returns
//!   False after one BLPOP that timed out *and* one more busy SET (:234-235, :237); a BLPOP
//!   that got a signal resets nothing, so each later BLPOP waits its full `t` again. Without
//!   `timeout` a BLPOP that times out just loops (for ever with `expire=None`). A `timeout`
//!   above `expire` without `auto_renewal` raises `TimeoutTooLarge` (:225-226);
//! - `release()` stops the renewal thread (`stop.set(); join()`, :347-348, :318-323) and runs
//!   UNLOCK_SCRIPT (:20-30, :350): if the key holds the id, `DEL` the signal, `LPUSH` it one
//!   element, `PEXPIRE` it `signal_expire` ms (default 1000, :107, :154) and `DEL` the lock
//!   key; otherwise it answers 1 and `release()` raises `NotAcquired` (:351-352). One element
//!   wakes one BLPOP waiter; without one, it waits for the next waiter up to `signal_expire`;
//! - `auto_renewal=True` (needs `expire`, :141-142) starts a thread at the end of `acquire`
//!   (:243-244, :288-310) that loops `while not stop.wait(timeout=interval): lock.extend()`
//!   with `interval = expire * 2 / 3` seconds (:168, :278-285): the first extend `interval`
//!   after acquiring, each next one `interval` after the previous returned. EXTEND_SCRIPT
//!   (:33-42) answers 0 and `EXPIRE`s the key `expire` s if it holds the id, 1 if not, 2 if
//!   it has no TTL; `extend()` raises `NotAcquired` on 1, `NotExpirable` on 2 (:264-270).
//!   Nothing in the loop catches: the exception ends the thread (Python prints it to stderr
//!   through `threading.excepthook`), and nothing tells the caller, who keeps working; it
//!   learns at `release()`, whose `_stop_lock_renewer` finds the thread dead (:318-319) and
//!   whose UNLOCK answers 1: `NotAcquired` (ionelmc/python-redis-lock#85, open). A connection
//!   error in `extend` (redis-py raises it once its own retries are spent) ends it the same way.
//!
//! Modelled as: one `Lock` object per round (`with redis_lock.Lock(conn, name, ...)`, the
//! README's pattern), so one id per round; a `GET` for `self._held` at the start of each
//! `acquire` (:214, :186-187, :199-203); the renewal thread as a background timer of the same
//! process (a pause stops both, as it stops a Python process's threads).
//!
//! Simplifications: redis-py's `Script` sends EVALSHA and loads the script on NOSCRIPT; here
//! the scripts go as EVAL with their source (the same script runs; a node restart's emptied
//! script cache would cost redis-py one more round trip). redis-py's `socket_timeout` is the
//! default of redis-py up to 7.4, None: a command waits for its answer (a refused connection
//! or a reset fails it at once). redis-py ≥ 8.0.0's default of 5 s (733f80ec, #4082:
//! redis/_defaults.py:7) is not modelled: a BLPOP longer than it times out on the client,
//! which redis-py answers by disconnecting (client.py `_close_connection`), and that unblocks
//! the BLPOP on the server; the simulator has no disconnect, so a timed-out BLPOP would stay
//! parked at the node and swallow a later signal that in Redis goes to another waiter.
//! `blocking=False`, `reset()`, `reset_all()` and `extend()` called by hand are not modelled.

use std::sync::Arc;

use crate::client::section::{Section, SectionHost, Stage};
use crate::client::single::advance_token;
use crate::client::timeout::RequestTimeout;
use crate::client::timer::{NsRange, Timer};
use crate::history::Observation;
use crate::process::{Cx, Process};
use crate::proto::command::{ScriptRef, SetCond, SetExpiry};
use crate::proto::{Bytes, Command, Msg, Reply, Script};
use crate::time::{NS_PER_MS, NS_PER_S, ProcId};

/// UNLOCK_SCRIPT, src/redis_lock/__init__.py:20-30 at v4.0.1, byte for byte.
pub const UNLOCK_SRC: &str = "
    if redis.call(\"get\", KEYS[1]) ~= ARGV[1] then
        return 1
    else
        redis.call(\"del\", KEYS[2])
        redis.call(\"lpush\", KEYS[2], 1)
        redis.call(\"pexpire\", KEYS[2], ARGV[2])
        redis.call(\"del\", KEYS[1])
        return 0
    end
";

/// EXTEND_SCRIPT, :33-42 at v4.0.1.
pub const EXTEND_SRC: &str = "
    if redis.call(\"get\", KEYS[1]) ~= ARGV[1] then
        return 1
    elseif redis.call(\"ttl\", KEYS[1]) < 0 then
        return 2
    else
        redis.call(\"expire\", KEYS[1], ARGV[2])
        return 0
    end
";

/// `Lock(signal_expire=1000)`, :107.
pub const DEFAULT_SIGNAL_EXPIRE_MS: u64 = 1_000;
/// The key prefixes, :166-167.
pub const LOCK_PREFIX: &str = "lock:";
pub const SIGNAL_PREFIX: &str = "lock-signal:";

/// The `Lock(...)` and `acquire(...)` arguments a model sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PythonRedisLockOptions {
    /// `expire` in ms (a whole number of seconds); None: the library's default, no expiry.
    pub expire_ms: Option<u64>,
    /// `auto_renewal` (default False).
    pub auto_renewal: bool,
    /// `acquire(timeout=...)` in ms (a whole number of seconds); None: the default.
    pub timeout_ms: Option<u64>,
    /// `signal_expire` in ms.
    pub signal_expire_ms: u64,
    /// Not the library: the caller takes a fencing token (`INCR` of `fence_key`) after
    /// `acquire` returns and presents it to the resource.
    pub fenced: bool,
}

impl PythonRedisLockOptions {
    /// `Lock(conn, name)`'s defaults: no expiry, no renewal, `acquire()` without timeout.
    pub fn defaults() -> PythonRedisLockOptions {
        PythonRedisLockOptions {
            expire_ms: None,
            auto_renewal: false,
            timeout_ms: None,
            signal_expire_ms: DEFAULT_SIGNAL_EXPIRE_MS,
            fenced: false,
        }
    }

    /// Why these options cannot run, if they cannot: what the library raises, or a value it
    /// would silently change.
    pub fn validate(&self) -> Result<(), String> {
        let whole_s = |what: &str, ms: u64, line: &str| {
            if ms == 0 || !ms.is_multiple_of(1_000) {
                Err(format!(
                    "python-redis-lock: {what} is whole seconds (`int({what})`, {line}): {ms} ms is not; write a whole number of seconds, at least 1s"
                ))
            } else {
                Ok(())
            }
        };
        if let Some(e) = self.expire_ms {
            whole_s("expire", e, "__init__.py:146-147")?;
        }
        if let Some(t) = self.timeout_ms {
            whole_s("timeout", t, "__init__.py:220-221")?;
        }
        if self.auto_renewal && self.expire_ms.is_none() {
            return Err(
                "python-redis-lock: \"Expire may not be None when auto_renewal is set\" (ValueError, __init__.py:141-142)"
                    .into(),
            );
        }
        if let (Some(t), Some(e)) = (self.timeout_ms, self.expire_ms)
            && !self.auto_renewal
            && t > e
        {
            return Err(format!(
                "python-redis-lock: acquire(timeout={}) above expire={} without auto_renewal raises TimeoutTooLarge (__init__.py:225-226)",
                t / 1_000,
                e / 1_000
            ));
        }
        Ok(())
    }

    /// BLPOP's timeout in seconds: `timeout or self._expire or 0` (:229).
    pub fn blpop_timeout_s(&self) -> u64 {
        self.timeout_ms
            .or(self.expire_ms)
            .map_or(0, |ms| ms / 1_000)
    }

    /// The renewal thread's interval: `float(expire) * 2 / 3` s (:168).
    pub fn renewal_interval_ns(&self) -> Option<u64> {
        let e = self.expire_ms.filter(|_| self.auto_renewal)?;
        Some(e * NS_PER_MS * 2 / 3)
    }
}

/// The signal list of lock key `key` (`lock:<name>` → `lock-signal:<name>`, :166-167).
pub fn signal_key(key: &[u8]) -> Option<Bytes> {
    let name = key.strip_prefix(LOCK_PREFIX.as_bytes())?;
    let mut v = SIGNAL_PREFIX.as_bytes().to_vec();
    v.extend_from_slice(name);
    Some(Bytes::from_slice(&v))
}

#[derive(Clone, Debug)]
pub struct PythonRedisLockConfig {
    /// Index of the lock in the model's lock table.
    pub lock: u32,
    /// `lock:<name>`.
    pub key: Bytes,
    pub redis: ProcId,
    pub resource: Option<ProcId>,
    pub options: PythonRedisLockOptions,
    pub hold: NsRange,
    pub think: NsRange,
    /// The application's own timeout for a resource operation (not python-redis-lock's).
    pub resource_timeout_ns: u64,
    pub rounds: Option<u64>,
    /// The caller's fencing counter (`fenced`).
    pub fence_key: Bytes,
    /// Prefix of this client's ids (unique per client); the round number follows.
    pub token_prefix: String,
}

impl PythonRedisLockConfig {
    pub fn new(lock: u32, key: Bytes, redis: ProcId, token_prefix: &str) -> PythonRedisLockConfig {
        PythonRedisLockConfig {
            lock,
            key,
            redis,
            resource: None,
            options: PythonRedisLockOptions::defaults(),
            hold: NsRange::fixed(NS_PER_S),
            think: NsRange::fixed(100 * NS_PER_MS),
            resource_timeout_ns: NS_PER_S,
            rounds: None,
            fence_key: Bytes::from_slice(b"fence"),
            token_prefix: token_prefix.into(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// `self._held`: the GET that opens `acquire` (:214).
    CheckingHeld,
    /// `SET name id NX EX expire` (:232).
    Acquiring,
    /// `BLPOP signal t` (:237).
    Blocking,
    /// The caller's fencing INCR (`fenced`).
    Fencing,
    /// In the critical section; `Section::stage` says where.
    Section,
    /// `release()` joins the renewal thread, whose extend is in flight (:321-322).
    Joining,
    /// UNLOCK_SCRIPT in flight (:350).
    Releasing,
    /// Think timer armed.
    Waiting,
    Done,
}

/// The renewal thread (`_lock_renewer`, :273-286).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Renewer {
    /// No thread (not started, or joined by `release()`).
    None,
    /// Alive: `stop.wait(interval)` or an extend in flight (`renew_id`).
    Alive,
    /// Ended by an exception from `extend` (`NotAcquired`, `NotExpirable`, a connection
    /// error): nobody is told.
    Died,
}

/// One python-redis-lock client: a process using `with redis_lock.Lock(...)` in a loop.
#[derive(Clone, Debug)]
pub struct PythonRedisLockClient {
    pub config: PythonRedisLockConfig,
    phase: Phase,
    // Invariant: a step timer whose generation differs from `timer_gen` is stale.
    timer_gen: u64,
    /// Id of the request the current phase waits for (0: none).
    pending_id: u64,
    /// Deadline of the resource request in flight (commands to Redis have none).
    deadline_mono_ns: Option<u64>,
    next_id: u64,
    round: u64,
    section: Section,
    /// The Lock object's id (`self._id`), one per round.
    token: Bytes,
    token_attempt: u64,
    /// `acquire(timeout=...)`'s `timed_out` (:230, :237).
    timed_out: bool,
    renewer: Renewer,
    // Invariant: a background timer of another generation than `renew_gen` is stale.
    renew_gen: u64,
    /// Id of the extend in flight (0: none).
    renew_id: u64,
    timeout: RequestTimeout,
    unlock: Script,
    extend: Script,
    /// KEYS of both scripts: `(self._name, self._signal)`.
    keys: Arc<[Bytes]>,
    signal: Bytes,
    /// ARGV[2] of UNLOCK (signal_expire ms) and EXTEND (expire s), rendered once.
    signal_expire_arg: Bytes,
    expire_arg: Bytes,
}

impl PythonRedisLockClient {
    pub fn new(config: PythonRedisLockConfig) -> PythonRedisLockClient {
        config.options.validate().expect("validated options");
        let signal = signal_key(&config.key).expect("a lock:<name> key");
        let section = Section::new(
            config.lock,
            config.resource,
            config.hold,
            config.think,
            config.rounds,
        );
        let o = &config.options;
        let signal_expire_arg = Bytes::from(o.signal_expire_ms.to_string().as_str());
        let expire_arg = Bytes::from(o.expire_ms.map_or(0, |e| e / 1_000).to_string().as_str());
        PythonRedisLockClient {
            keys: Arc::new([config.key.clone(), signal.clone()]),
            signal,
            signal_expire_arg,
            expire_arg,
            config,
            phase: Phase::Idle,
            timer_gen: 0,
            pending_id: 0,
            deadline_mono_ns: None,
            next_id: 1,
            round: 0,
            section,
            token: Bytes::new(),
            token_attempt: 0,
            timed_out: false,
            renewer: Renewer::None,
            renew_gen: 0,
            renew_id: 0,
            timeout: RequestTimeout::default(),
            unlock: Script::new(UNLOCK_SRC.as_bytes()),
            extend: Script::new(EXTEND_SRC.as_bytes()),
        }
    }

    fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn request(&mut self, cx: &mut Cx<'_>, phase: Phase, cmd: Command) {
        let id = self.fresh_id();
        self.pending_id = id;
        self.deadline_mono_ns = None;
        self.phase = phase;
        self.timer_gen += 1;
        cx.send(self.config.redis, Msg::Request { id, cmd });
    }

    fn script(&self, script: &Script, args: [Bytes; 2]) -> Command {
        Command::Eval {
            script: ScriptRef::Source(script.clone()),
            keys: self.keys.clone(),
            args: Arc::new(args),
            read_only: false,
        }
    }

    /// A new round: a new `Lock` object (a new id), then `acquire()`.
    fn start_round(&mut self, cx: &mut Cx<'_>) {
        if self.section.finished() {
            self.phase = Phase::Done;
            return;
        }
        self.round += 1;
        advance_token(
            &mut self.token,
            &mut self.token_attempt,
            &self.config.token_prefix,
            self.round,
        );
        self.timed_out = false;
        self.renewer = Renewer::None;
        cx.observe(Observation::Attempt {
            lock: self.config.lock,
            token: self.token.clone(),
        });
        let cmd = Command::Get(self.config.key.clone());
        self.request(cx, Phase::CheckingHeld, cmd);
    }

    /// `self._client.set(self._name, self._id, nx=True, ex=self._expire)` (:232).
    fn send_set(&mut self, cx: &mut Cx<'_>) {
        let cmd = Command::Set {
            key: self.config.key.clone(),
            value: self.token.clone(),
            cond: Some(SetCond::Nx),
            get: false,
            expiry: self
                .config
                .options
                .expire_ms
                .map(|e| SetExpiry::Ex((e / 1_000) as i64)),
        };
        self.request(cx, Phase::Acquiring, cmd);
    }

    /// The SET found the lock busy (:233-237).
    fn busy(&mut self, cx: &mut Cx<'_>) {
        if self.timed_out {
            // `return False`: the caller's round ends without the lock.
            self.gave_up(cx);
            return;
        }
        let t = self.config.options.blpop_timeout_s();
        let cmd = Command::BLPop {
            keys: vec![self.signal.clone()],
            timeout: Bytes::from(t.to_string().as_str()),
        };
        self.request(cx, Phase::Blocking, cmd);
    }

    /// `acquire` returned False or raised: the round ends without the lock.
    fn gave_up(&mut self, cx: &mut Cx<'_>) {
        cx.observe(Observation::GaveUp {
            lock: self.config.lock,
        });
        self.think(cx);
    }

    /// The SET succeeded: `acquire` starts the renewal thread and returns True (:242-245).
    fn set_won(&mut self, cx: &mut Cx<'_>) {
        if self.config.options.auto_renewal {
            self.renewer = Renewer::Alive;
            self.schedule_renewal(cx);
        }
        if self.config.options.fenced {
            let cmd = Command::IncrBy(self.config.fence_key.clone(), 1);
            self.request(cx, Phase::Fencing, cmd);
        } else {
            self.acquired(cx, None);
        }
    }

    fn acquired(&mut self, cx: &mut Cx<'_>, fence: Option<u64>) {
        cx.observe(Observation::Acquired {
            lock: self.config.lock,
            token: self.token.clone(),
            fence,
            validity_ns: self.config.options.expire_ms.map(|e| e * NS_PER_MS),
            believed_until: None,
        });
        self.enter_section(cx, fence);
    }

    fn schedule_renewal(&mut self, cx: &mut Cx<'_>) {
        let every = self
            .config
            .options
            .renewal_interval_ns()
            .expect("auto_renewal");
        self.renew_gen += 1;
        Timer::Background(self.renew_gen).set(cx, every);
    }

    /// `lock.extend(expire=lock._expire)` (:284).
    fn send_extend(&mut self, cx: &mut Cx<'_>) {
        let id = self.fresh_id();
        self.renew_id = id;
        let cmd = self.script(&self.extend, [self.token.clone(), self.expire_arg.clone()]);
        cx.send(self.config.redis, Msg::Request { id, cmd });
    }

    /// The extend returned (`reply`) or failed on the connection (None).
    fn on_extend_done(&mut self, cx: &mut Cx<'_>, reply: Option<Reply>) {
        self.renew_id = 0;
        match reply {
            Some(Reply::Int(0)) if self.renewer == Renewer::Alive => {
                cx.observe(Observation::Extended {
                    lock: self.config.lock,
                    token: self.token.clone(),
                    validity_ns: self.config.options.expire_ms.map(|e| e * NS_PER_MS),
                    believed_until: None,
                });
                if self.phase == Phase::Joining {
                    // `stop` is set: the thread's next `stop.wait` returns True and it ends.
                    self.renewer = Renewer::None;
                } else {
                    self.schedule_renewal(cx);
                }
            }
            // NotAcquired (1), NotExpirable (2), another answer or a connection error: the
            // exception ends the thread (:264-270, :284), silently for the caller.
            other => {
                // Joined by `release()`, the thread is gone either way.
                self.renewer = if self.phase == Phase::Joining {
                    Renewer::None
                } else {
                    Renewer::Died
                };
                {
                    let why = match other {
                        Some(Reply::Int(1)) => "NotAcquired",
                        Some(Reply::Int(2)) => "NotExpirable",
                        Some(_) => "an unexpected answer",
                        None => "a connection error",
                    };
                    cx.observe(Observation::Note(format!(
                        "renewal thread of {} dies on {why}, unseen by the holder",
                        String::from_utf8_lossy(&self.token)
                    )));
                }
            }
        }
        if self.phase == Phase::Joining {
            self.send_unlock(cx);
        }
    }

    fn send_unlock(&mut self, cx: &mut Cx<'_>) {
        let cmd = self.script(
            &self.unlock,
            [self.token.clone(), self.signal_expire_arg.clone()],
        );
        self.request(cx, Phase::Releasing, cmd);
    }

    /// A command of the current phase got a reply.
    fn on_reply(&mut self, cx: &mut Cx<'_>, reply: Reply) {
        match self.phase {
            Phase::CheckingHeld => match reply {
                // `AlreadyAcquired` needs this object's id in the key: a fresh object's id
                // is never there.
                Reply::Error(_) => self.gave_up(cx),
                _ => self.send_set(cx),
            },
            Phase::Acquiring => match reply {
                Reply::Ok => self.set_won(cx),
                Reply::Nil => self.busy(cx),
                // A ResponseError raised out of `acquire`.
                _ => self.gave_up(cx),
            },
            Phase::Blocking => match reply {
                // Woken by a signal: SET again, `timed_out` now False (:237).
                Reply::Array(v) if !v.is_empty() => {
                    self.timed_out = false;
                    self.send_set(cx);
                }
                // Timed out: `not None and timeout` is the timeout, or False without one.
                Reply::Nil | Reply::Array(_) => {
                    self.timed_out = self.config.options.timeout_ms.is_some();
                    self.send_set(cx);
                }
                _ => self.gave_up(cx),
            },
            Phase::Fencing => match reply {
                Reply::Int(n) if n > 0 => self.acquired(cx, Some(n as u64)),
                // No token, no safe write: the caller's `with` exits and releases.
                _ => self.release_lock(cx),
            },
            // 0, or 1: `NotAcquired` raised to the caller, after its section.
            Phase::Releasing => {
                if reply == Reply::Int(1) {
                    cx.observe(Observation::Note(format!(
                        "release() of {} raises NotAcquired: the key was not its own",
                        String::from_utf8_lossy(&self.token)
                    )));
                }
                self.think(cx);
            }
            Phase::Idle | Phase::Section | Phase::Joining | Phase::Waiting | Phase::Done => {}
        }
    }

    /// A command of the current phase failed on the connection: redis-py raises.
    fn on_failed(&mut self, cx: &mut Cx<'_>) {
        match self.phase {
            Phase::CheckingHeld | Phase::Acquiring | Phase::Blocking => {
                self.stop_renewer();
                self.gave_up(cx);
            }
            Phase::Fencing => self.release_lock(cx),
            Phase::Releasing => self.think(cx),
            Phase::Idle | Phase::Section | Phase::Joining | Phase::Waiting | Phase::Done => {}
        }
    }

    fn stop_renewer(&mut self) {
        self.renewer = Renewer::None;
        self.renew_id = 0;
    }

    fn on_timeout_timer(&mut self, cx: &mut Cx<'_>) {
        if self.timeout.expired(cx, self.deadline_mono_ns) {
            self.deadline_mono_ns = None;
            self.pending_id = 0;
            if self.phase == Phase::Section {
                self.on_resource_timeout(cx);
            }
        }
    }
}

impl SectionHost for PythonRedisLockClient {
    fn section(&mut self) -> &mut Section {
        &mut self.section
    }

    fn token(&self) -> Bytes {
        self.token.clone()
    }

    fn resource_request_id(&mut self) -> u64 {
        let id = self.fresh_id();
        self.pending_id = id;
        self.timer_gen += 1;
        id
    }

    fn await_resource(&mut self, cx: &mut Cx<'_>, _id: u64) {
        self.deadline_mono_ns = Some(cx.mono_ns + self.config.resource_timeout_ns);
        self.timeout.ensure(cx, self.config.resource_timeout_ns);
    }

    fn arm_step(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        self.pending_id = 0;
        self.deadline_mono_ns = None;
        self.timer_gen += 1;
        Timer::Step(self.timer_gen).set(cx, after_ns);
    }

    fn enter_phase_section(&mut self) {
        self.phase = Phase::Section;
    }

    fn enter_phase_waiting(&mut self) {
        self.phase = Phase::Waiting;
    }

    /// `release()`: stop and join the renewal thread, then UNLOCK (:347-350).
    fn release_lock(&mut self, cx: &mut Cx<'_>) {
        self.pending_id = 0;
        self.deadline_mono_ns = None;
        if self.renewer == Renewer::Alive && self.renew_id != 0 {
            // `join()` waits for the extend in flight.
            self.phase = Phase::Joining;
            self.timer_gen += 1;
            return;
        }
        // A thread waiting in `stop.wait` ends at once; a dead one is left alone (:318-319).
        self.renewer = Renewer::None;
        self.send_unlock(cx);
    }

    fn next_attempt(&mut self, cx: &mut Cx<'_>) {
        self.start_round(cx);
    }
}

impl Process for PythonRedisLockClient {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        self.start_round(cx);
    }

    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        match msg {
            Msg::Reply { id, reply } if id != 0 && id == self.renew_id => {
                self.on_extend_done(cx, Some(reply));
            }
            Msg::Reply { id, reply } if id != 0 && id == self.pending_id => {
                self.pending_id = 0;
                self.on_reply(cx, reply);
            }
            Msg::Refused { id } if id != 0 && id == self.renew_id => {
                self.on_extend_done(cx, None);
            }
            Msg::Refused { id } if id != 0 && id == self.pending_id => {
                self.pending_id = 0;
                self.on_failed(cx);
            }
            // The node was killed with its host up: every command in flight on its
            // connections fails at once.
            Msg::Refused { id: 0 } if from == self.config.redis => {
                if self.renew_id != 0 {
                    self.on_extend_done(cx, None);
                }
                if self.pending_id != 0 && self.phase != Phase::Section {
                    self.pending_id = 0;
                    self.on_failed(cx);
                }
            }
            Msg::ResourceAck { id, version, .. } if id != 0 && id == self.pending_id => {
                self.pending_id = 0;
                self.deadline_mono_ns = None;
                if self.phase == Phase::Section {
                    self.on_resource_ack(cx, version);
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        match Timer::from_tag(tag) {
            Timer::Request => self.on_timeout_timer(cx),
            Timer::Background(g) => {
                if g == self.renew_gen && self.renewer == Renewer::Alive && self.renew_id == 0 {
                    self.send_extend(cx);
                }
            }
            Timer::Step(g) if g == self.timer_gen => match self.phase {
                Phase::Section => self.on_hold_timer(cx),
                Phase::Waiting => self.start_round(cx),
                _ => {}
            },
            Timer::Step(_) => {}
        }
    }

    fn on_restart(&mut self, _keep_data: bool) {
        // The process and its threads are gone; generations keep counting.
        self.phase = Phase::Idle;
        self.section.abandon();
        self.pending_id = 0;
        self.deadline_mono_ns = None;
        self.stop_renewer();
        self.timeout.reset();
        debug_assert_eq!(self.section.stage(), Stage::Outside);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::command::{hex, sha1_of};

    #[test]
    fn the_scripts_are_byte_for_byte_the_library_s() {
        // SHA1s of v4.0.1's UNLOCK_SCRIPT and EXTEND_SCRIPT (what its EVALSHA names).
        assert_eq!(
            hex(&sha1_of(UNLOCK_SRC.as_bytes())),
            "90da91872223f85eb1376a17e3c4df21ace8c54b"
        );
        assert_eq!(
            hex(&sha1_of(EXTEND_SRC.as_bytes())),
            "fed16109024d968d9496e4140fe1355bac05ebff"
        );
    }

    #[test]
    fn options_refuse_what_the_library_raises_or_truncates() {
        let o = |expire: Option<u64>, auto: bool, timeout: Option<u64>| PythonRedisLockOptions {
            expire_ms: expire,
            auto_renewal: auto,
            timeout_ms: timeout,
            ..PythonRedisLockOptions::defaults()
        };
        assert_eq!(o(Some(60_000), true, Some(10_000)).validate(), Ok(()));
        assert!(
            o(None, true, None)
                .validate()
                .unwrap_err()
                .contains("auto_renewal")
        );
        assert!(
            o(Some(2_500), false, None)
                .validate()
                .unwrap_err()
                .contains("whole seconds")
        );
        assert!(
            o(Some(10_000), false, Some(20_000))
                .validate()
                .unwrap_err()
                .contains("TimeoutTooLarge")
        );
        // With auto_renewal the library allows it.
        assert_eq!(o(Some(10_000), true, Some(20_000)).validate(), Ok(()));
    }

    #[test]
    fn blpop_waits_timeout_or_expire_and_renewal_runs_every_two_thirds_of_expire() {
        let mut o = PythonRedisLockOptions {
            expire_ms: Some(60_000),
            auto_renewal: true,
            ..PythonRedisLockOptions::defaults()
        };
        assert_eq!(o.blpop_timeout_s(), 60);
        assert_eq!(o.renewal_interval_ns(), Some(40 * NS_PER_S));
        o.timeout_ms = Some(10_000);
        assert_eq!(o.blpop_timeout_s(), 10);
        assert_eq!(PythonRedisLockOptions::defaults().blpop_timeout_s(), 0);
        assert_eq!(
            PythonRedisLockOptions::defaults().renewal_interval_ns(),
            None
        );
        assert_eq!(
            signal_key(b"lock:job").as_deref(),
            Some(&b"lock-signal:job"[..])
        );
        assert_eq!(signal_key(b"job"), None);
    }
}
