//! Redisson's `RLock` as shipped (`algorithm: "redisson"`), copied from the Redisson sources
//! of the version it names (`RedissonVersion`); file:line below are of redisson-3.43.0 unless
//! said otherwise.
//!
//! - Lock: `lock()` / `lock(leaseTime)` run the hash script (RedissonLock.java:218-227):
//!   `exists == 0 or hexists(key, uuid:threadId)` → `hincrby 1`, `pexpire lease`, nil; else
//!   the key's `pttl`. No retries: `evalWriteSyncedNoRetryAsync` (RedissonBaseLock.java:208).
//! - Waiting: on a TTL reply the client SUBSCRIBEs to `redisson_lock__channel:{key}`
//!   (RedissonLock.java:114, 310; RedissonObject.java:74-79), tries again once subscribed, and
//!   then waits for the unlock message `0` (LockPubSub.java:29, 42-46) or at most the TTL it
//!   was given (`getLatch().tryAcquire(ttl)`, RedissonLock.java:124-147; a message that
//!   arrives while a try is in flight leaves a permit, so the next wait ends at once). On
//!   success it UNSUBSCRIBEs (:149-151). A waiter whose wait ran out sends SUBSCRIBE again with
//!   its try: it stands for Redisson resubscribing after a reconnect, which the model's
//!   clients cannot see (a crashed node forgets its subscribers). An exception from the lock
//!   script (an error reply, a timeout, no synced replica) leaves `lock()`; the caller calls it
//!   again after `retry` (that loop is the user's code).
//! - Unlock: the script of RedissonLock.java:344-368 (`hincrby -1`; at 0 `del` and
//!   `publish(channel, 0)`, with the unlock-latch key of RedissonBaseLock.java:339-363, which
//!   is deleted after the reply); renewal is cancelled when the unlock completes, whatever
//!   its outcome (RedissonBaseLock.java:288-309).
//! - Lease given (`lease`): no watchdog; the key simply expires (RedissonLock.java:190-207).
//! - Watchdog (no lease): `lockWatchdogTimeout` (Config.java:74, 30 s) is the TTL, renewed
//!   `lockWatchdogTimeout / 3` after the previous renewal completed (RedissonBaseLock.java:
//!   118-159; 3.44.0 RenewalTask.java:61-68, 165-180), each renewal a command with retries:
//!   `timeout` 3 s (BaseConfig.java:58), `retryAttempts` and the delay between (3.43.0
//!   BaseConfig.java:62, 64: 3 and 1,500 ms; from 3.48.0 4 and EqualJitterDelay(1 s, 2 s),
//!   3.52.0 BaseConfig.java:63, 68, e1154e3ec). A renewal answered 0 cancels renewal.
//!   A send refused by a killed node (`Msg::Refused`) fails at once and is resent that
//!   delay after it started, every call alike (the lock and unlock scripts' `noRetry` only
//!   stops a resend after a response timeout); the last refused send fails the call
//!   (RedisExecutor.java, `on_refused`).
//!   The version switch: up to 3.43 a renewal that failed (an exception) removes the entry,
//!   so renewal stops for good (RedissonBaseLock.java:137-146, redisson#775); from 3.44.0
//!   (597d604a3, #6303; CHANGELOG.md:257 at redisson-3.52.0: "lock watchdog doesn't renew
//!   RLock if an expection has been thrown", sic) it is logged and the next renewal is
//!   scheduled (RenewalTask.java:170-179). The holder is told neither way.
//! - Replica sync check (`replicas`, the `connected_slaves` Redisson sees): with replicas,
//!   in any config but `useSingleServer()` (`isSingleConfig()` skips the check,
//!   CommandAsyncService.java:1005-1011; 3.52.0 :1064-1073), every synced eval (lock,
//!   unlock, renewal) goes in a batch followed by `WAIT replicas slavesSyncTimeout` (1 s,
//!   Config.java:78; 3.52.0 :84); `checkLockSyncedSlaves` (default true, :76; 3.52.0 :82)
//!   turns `WAIT` = 0 into "None of slaves were synced" (CommandAsyncService.java:1004-1072).
//!   A model with `replicas: N` stands for such a config; a single-server one is
//!   `replicas: 0`, whatever replicas the node has.
//!   On a lock, `handleNoSync` (3.43.0 :956-986) compares that message with a shorter text,
//!   so up to 3.46 the written lock is not undone; from 3.47.0 (f2b6ad849) it matches
//!   `NoSyncedSlavesException` and unlocks it (3.52.0 :1006-1018).
//!
//! Simplified, and why: one thread per client, so the lock name `uuid:threadId` is fixed per
//! client (a client's next `lock()` on a key its own lock name still holds is reentrant, as
//! in Redisson), unless `lock_owner` gives the group's members one name (`thread_id: shared`:
//! reactive pipelines on one thread, 3.52.0 RedissonBaseLock.java:241-249, redisson#4467);
//! the command and pub/sub connections are one process (pubsub.rs says how).

use crate::client::section::{Section, SectionHost};
use crate::client::single::NsRange;
use crate::client::timeout::RequestTimeout;
use crate::client::timer::Timer;
use crate::history::Observation;
use crate::process::{Cx, Process};
use crate::proto::command::ScriptRef;
use crate::proto::{Bytes, Command, Msg, Reply, Script};
use crate::time::{NS_PER_MS, ProcId};

/// RedissonLock.java:218-227 (3.43.0; the same text in 3.52.0 and 4.7.0).
pub const LOCK_SRC: &str = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
/// RFencedLock's lock script, 3.52.0 RedissonFencedLock.java:107-119: the same test, plus
/// `incr` of `redisson_lock_token:{key}` on the same Redis; `{-1, token}` or `{pttl, -1}`.
pub const FENCED_LOCK_SRC: &str = "if (redis.call('exists', KEYS[1]) == 0 or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then local token = redis.call('incr', KEYS[2]);redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return {-1, token}; end; return {redis.call('pttl', KEYS[1]), -1};";
/// RedissonLock.java:344-368 (3.43.0; the same in 3.52.0).
pub const UNLOCK_SRC: &str = "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; ";
/// 3.43.0 RedissonBaseLock.java:178-187.
pub const RENEW_SRC_3_43: &str = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;";
/// 3.44.0 LockTask.java:70-83 (the batch renewal, one key here).
pub const RENEW_SRC_3_44: &str = "local result = {} for i = 1, #KEYS, 1 do if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); else table.insert(result, 0); end; end; return result;";

/// Set in the generation of a main-resend timer (a `Timer::Background` beside the
/// renewal's, whose generations never reach it).
const MAIN_RESEND_BIT: u64 = 1 << 62;

/// The Redisson release whose behaviour is copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedissonVersion {
    /// redisson-3.43.0: one failed renewal stops the watchdog; 3 retries 1.5 s apart.
    V3_43,
    /// redisson-3.44.0: renewal goes on after an error (597d604a3); 3 retries 1.5 s apart.
    /// Also 3.45.0: a renewal pass that meets an entry removed under it throws and the
    /// client's renewal task is never scheduled again (redisson#6472).
    V3_44,
    /// redisson-3.45.1: as 3.44.0, and the pass skips a vanished entry (5f9589346, #6472).
    V3_45_1,
    /// redisson-3.52.0: as 3.44, with 4 retries and EqualJitterDelay(1 s, 2 s) (since 3.48.0).
    V3_52,
}

impl RedissonVersion {
    pub const ALL: [RedissonVersion; 4] = [
        RedissonVersion::V3_43,
        RedissonVersion::V3_44,
        RedissonVersion::V3_45_1,
        RedissonVersion::V3_52,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RedissonVersion::V3_43 => "3.43.0",
            RedissonVersion::V3_44 => "3.44.0",
            RedissonVersion::V3_45_1 => "3.45.1",
            RedissonVersion::V3_52 => "3.52.0",
        }
    }

    pub fn from_name(s: &str) -> Option<RedissonVersion> {
        RedissonVersion::ALL.into_iter().find(|v| v.name() == s)
    }

    /// Does the watchdog go on after a renewal that failed with an exception?
    pub fn renews_after_error(self) -> bool {
        self != RedissonVersion::V3_43
    }

    /// Does a renewal pass that meets an entry another thread's unlock removed under it throw,
    /// so that the client's renewal task is never scheduled again? 3.44.0 to 3.45.0:
    /// `LockTask.renew` dereferences `name2entry.get(key)` unchecked (3.44.0
    /// renewal/LockTask.java:51-54), the NPE leaves `RenewalTask.run` (RenewalTask.java:170)
    /// before `schedule()`, and `running` stays set, so `add` schedules nothing (:136-147)
    /// while the client keeps any lock. 3.45.1 skips the entry (5f9589346).
    pub fn pass_dies_on_vanished_entry(self) -> bool {
        self == RedissonVersion::V3_44
    }

    /// Does a lock that failed the sync check get unlocked? `handleNoSync` matched the
    /// exception by a message shorter than the one thrown up to 3.46 (3.44.0
    /// CommandAsyncService.java:967 vs 1069), so it never did; from 3.47.0 (f2b6ad849) it
    /// matches `NoSyncedSlavesException` (3.52.0 :1009).
    pub fn undoes_unsynced_lock(self) -> bool {
        self == RedissonVersion::V3_52
    }

    /// `retryAttempts`: resends after the first send.
    pub fn retry_attempts(self) -> u32 {
        match self {
            RedissonVersion::V3_43 | RedissonVersion::V3_44 | RedissonVersion::V3_45_1 => 3,
            RedissonVersion::V3_52 => 4,
        }
    }

    /// The delay before resend number `attempt` (0-based), as the range it is drawn from.
    /// EqualJitterDelay.calcDelay (3.52.0 :51-63): half of min(base·2^attempt, max) plus a
    /// uniform draw up to the other half.
    pub fn retry_delay(self, attempt: u32) -> NsRange {
        match self {
            RedissonVersion::V3_43 | RedissonVersion::V3_44 | RedissonVersion::V3_45_1 => {
                NsRange::fixed(1_500 * NS_PER_MS)
            }
            RedissonVersion::V3_52 => {
                let exp = (1_000u64 << attempt.min(20)).min(2_000);
                NsRange::new(exp / 2 * NS_PER_MS, exp * NS_PER_MS)
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct RedissonConfig {
    /// Index of the lock in the model's lock table.
    pub lock: u32,
    pub key: Bytes,
    pub redis: ProcId,
    pub resource: Option<ProcId>,
    pub version: RedissonVersion,
    /// `lockWatchdogTimeout` (Config.java:74): the TTL without a lease, renewed every third.
    pub watchdog_timeout_ms: u64,
    /// `lock(leaseTime)`: the TTL, and no watchdog.
    pub lease_ms: Option<u64>,
    /// The replicas Redisson counts (`connected_slaves`); 0: no `WAIT` after synced evals
    /// (always so with `useSingleServer()`, which skips the sync check).
    pub sync_replicas: u32,
    /// `slavesSyncTimeout` (Config.java:78).
    pub slaves_sync_timeout_ms: u64,
    /// `timeout` (BaseConfig.java:58): a command without a reply after this fails (or is
    /// resent, for renewals).
    pub timeout_ns: u64,
    /// Extra delay drawn for every renewal (a starved timer thread, redisson#5698).
    pub renewal_delay: NsRange,
    /// The first renewal pass at or after this monotonic time meets another thread of the
    /// same RedissonClient unlocking another watchdog lock: the entry the pass was about to
    /// read is removed under it (redisson#6472). Whether the pass survives is the version's
    /// (`pass_dies_on_vanished_entry`).
    pub racing_unlock_at_ns: Option<u64>,
    /// The caller's thread is interrupted when its lock script is not answered within this
    /// (`lockInterruptibly`); the thread then ends.
    pub interrupt_after_ns: Option<u64>,
    /// What a lock reply that arrives after the interrupt does: `false` as shipped (its
    /// callback arms the watchdog for a lock nobody holds, redisson#7272), `true` as PR
    /// #7277 proposes (drop the watchdog and unlock).
    pub late_acquire_unlocks: bool,
    pub hold: NsRange,
    pub think: NsRange,
    /// The caller's delay before calling `lock()` again after it threw.
    pub retry: NsRange,
    /// `RFencedLock` (`lockAndGetToken()`): the lock script also INCRs a token on the same
    /// Redis, and the critical section presents it to the resource.
    pub fenced: bool,
    pub rounds: Option<u64>,
    /// The client's name: its lock name is `<name>:1` (`uuid:threadId`).
    pub token_prefix: String,
    /// The `uuid` of the lock name when the group's members are callers of one
    /// RedissonClient on one thread — reactive pipelines a Reactor or Netty thread runs in
    /// turn, whose `lock()` without a `threadId` takes `Thread.currentThread().getId()`
    /// (redisson#4467): the group's name, one lock name for all, so each member's lock script
    /// finds the hash field held and re-enters. None: the member's own name.
    pub lock_owner: Option<String>,
}

impl RedissonConfig {
    /// Redisson's defaults for `version`: watchdog of 30 s, no lease, no replicas, 3 s
    /// timeout; a 1 s critical section, 100 ms think and retry.
    pub fn new(
        lock: u32,
        key: Bytes,
        redis: ProcId,
        version: RedissonVersion,
        token_prefix: &str,
    ) -> RedissonConfig {
        RedissonConfig {
            lock,
            key,
            redis,
            resource: None,
            version,
            watchdog_timeout_ms: 30_000,
            lease_ms: None,
            sync_replicas: 0,
            slaves_sync_timeout_ms: 1_000,
            timeout_ns: 3_000 * NS_PER_MS,
            renewal_delay: NsRange::fixed(0),
            racing_unlock_at_ns: None,
            interrupt_after_ns: None,
            late_acquire_unlocks: false,
            hold: NsRange::fixed(1_000 * NS_PER_MS),
            think: NsRange::fixed(100 * NS_PER_MS),
            retry: NsRange::fixed(100 * NS_PER_MS),
            fenced: false,
            rounds: None,
            token_prefix: token_prefix.into(),
            lock_owner: None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// The lock script is in flight.
    Acquiring,
    /// SUBSCRIBE sent, its confirmation awaited.
    Subscribing,
    /// Waiting for the unlock message or the TTL (a step timer, unless the TTL is -1).
    Waiting,
    Section,
    /// The unlock script is in flight.
    Releasing,
    /// Think or retry timer armed.
    Pausing,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallKind {
    Lock,
    Unlock,
    Renew,
}

/// Why a call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
enum CallError {
    Timeout,
    /// Every send was refused (the node was killed on a host that stayed up).
    Refused,
    NoSyncedSlaves,
    Reply(String),
}

/// One Redisson command: the EVAL and, with replicas, the WAIT pipelined after it.
#[derive(Clone, Debug)]
struct Call {
    kind: CallKind,
    eval_id: u64,
    // Invariant: 0 iff no WAIT was sent with this send of the call.
    wait_id: u64,
    eval_reply: Option<Reply>,
    deadline_mono_ns: u64,
    /// When this send was made: a refused send is made again `retryInterval` after it.
    sent_mono_ns: u64,
    /// Sends so far (1 + resends).
    sends: u32,
    /// The caller stopped waiting for it (interrupted): its outcome has no caller.
    abandoned: bool,
}

/// The renewal's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Renewal {
    Off,
    /// The next renewal's timer is armed.
    Scheduled,
    /// A renewal call is in flight.
    InFlight,
    /// A renewal timed out; its resend's timer is armed.
    Resending,
}

#[derive(Clone, Debug)]
pub struct RedissonClient {
    pub config: RedissonConfig,
    phase: Phase,
    // Invariant: a step timer of another generation is stale.
    timer_gen: u64,
    next_id: u64,
    round_started: bool,
    section: Section,
    /// `uuid:threadId`, the hash field.
    lock_name: Bytes,
    channel: Bytes,
    holding: bool,
    subscribed: bool,
    /// Id of the SUBSCRIBE whose confirmation the phase `Subscribing` waits for.
    subscribe_id: u64,
    /// An unlock message arrived while no wait was on (the latch's permit).
    permit: bool,
    main: Option<Call>,
    /// The resource request the section waits for (0: none) and its deadline.
    resource_id: u64,
    resource_deadline_mono_ns: Option<u64>,
    renew_call: Option<Call>,
    /// A lock or unlock whose send was refused, to be sent again when the timer of
    /// generation `main_resend_gen` fires: its kind, sends so far, and whether abandoned.
    main_resend: Option<(CallKind, u32, bool)>,
    // Invariant: a main-resend timer of another generation is stale.
    main_resend_gen: u64,
    renewal: Renewal,
    /// Sends made of the renewal being resent.
    renew_sends: u32,
    // Invariant: a background timer of another generation is stale.
    renew_gen: u64,
    /// The racing unlock (`racing_unlock_at_ns`) has met a pass.
    raced: bool,
    timeout: RequestTimeout,
    lock_script: Script,
    fenced_lock_script: Script,
    unlock_script: Script,
    renew_script: Script,
    unlock_requests: u64,
}

impl RedissonClient {
    pub fn new(config: RedissonConfig) -> RedissonClient {
        assert!(config.watchdog_timeout_ms >= 3 && config.timeout_ns > 0);
        let section = Section::new(
            config.lock,
            config.resource,
            config.hold,
            config.think,
            config.rounds,
        );
        let owner = config.lock_owner.as_deref().unwrap_or(&config.token_prefix);
        let lock_name = Bytes::from(format!("{owner}:1").as_str());
        let key = String::from_utf8_lossy(&config.key).into_owned();
        // RedissonObject.prefixName.
        let channel = if key.contains('{') {
            format!("redisson_lock__channel:{key}")
        } else {
            format!("redisson_lock__channel:{{{key}}}")
        };
        let renew_src = if config.version == RedissonVersion::V3_43 {
            RENEW_SRC_3_43
        } else {
            RENEW_SRC_3_44
        };
        RedissonClient {
            phase: Phase::Idle,
            timer_gen: 0,
            next_id: 1,
            round_started: false,
            section,
            lock_name,
            channel: Bytes::from(channel.as_str()),
            holding: false,
            subscribed: false,
            subscribe_id: 0,
            permit: false,
            main: None,
            resource_id: 0,
            resource_deadline_mono_ns: None,
            renew_call: None,
            main_resend: None,
            main_resend_gen: 0,
            renewal: Renewal::Off,
            renew_sends: 0,
            renew_gen: 0,
            raced: false,
            timeout: RequestTimeout::default(),
            lock_script: Script::new(LOCK_SRC.as_bytes()),
            fenced_lock_script: Script::new(FENCED_LOCK_SRC.as_bytes()),
            unlock_script: Script::new(UNLOCK_SRC.as_bytes()),
            renew_script: Script::new(renew_src.as_bytes()),
            unlock_requests: 0,
            config,
        }
    }

    pub fn is_holding(&self) -> bool {
        self.holding
    }

    /// The TTL the lock script sets (`internalLockLeaseTime`).
    fn lease_ms(&self) -> u64 {
        self.config
            .lease_ms
            .unwrap_or(self.config.watchdog_timeout_ms)
    }

    fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn arm(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        self.timer_gen += 1;
        Timer::Step(self.timer_gen).set(cx, after_ns);
    }

    fn eval(&self, script: &Script, keys: Vec<Bytes>, args: Vec<Bytes>) -> Command {
        Command::Eval {
            script: ScriptRef::Source(script.clone()),
            keys: keys.into(),
            args: args.into(),
            read_only: false,
        }
    }

    fn n(v: u64) -> Bytes {
        Bytes::from(v.to_string().as_str())
    }

    /// The command of `kind`; `first`: a first send (a resend repeats the same command, so an
    /// unlock keeps its latch key).
    fn command_of(&mut self, kind: CallKind, first: bool) -> Command {
        let key = self.config.key.clone();
        match kind {
            CallKind::Lock if self.config.fenced => {
                let k = String::from_utf8_lossy(&key).into_owned();
                let token_key = if k.contains('{') {
                    format!("redisson_lock_token:{k}")
                } else {
                    format!("redisson_lock_token:{{{k}}}")
                };
                self.eval(
                    &self.fenced_lock_script,
                    vec![key, Bytes::from(token_key.as_str())],
                    vec![Self::n(self.lease_ms()), self.lock_name.clone()],
                )
            }
            CallKind::Lock => self.eval(
                &self.lock_script,
                vec![key],
                vec![Self::n(self.lease_ms()), self.lock_name.clone()],
            ),
            CallKind::Renew => self.eval(
                &self.renew_script,
                vec![key],
                vec![Self::n(self.lease_ms()), self.lock_name.clone()],
            ),
            CallKind::Unlock => {
                if first {
                    self.unlock_requests += 1;
                }
                let latch = self.unlock_latch();
                // (timeout + retryInterval) * retryAttempts (RedissonBaseLock.java:348).
                let t = self.config.version.retry_delay(0).max / NS_PER_MS;
                let latch_ms = ((self.config.timeout_ns / NS_PER_MS + t)
                    * u64::from(self.config.version.retry_attempts()))
                .max(1);
                self.eval(
                    &self.unlock_script,
                    vec![key, self.channel.clone(), latch],
                    vec![
                        Bytes::from("0"),
                        Self::n(self.lease_ms()),
                        self.lock_name.clone(),
                        Bytes::from("publish"),
                        Self::n(latch_ms),
                    ],
                )
            }
        }
    }

    fn unlock_latch(&self) -> Bytes {
        let key = String::from_utf8_lossy(&self.config.key).into_owned();
        let base = if key.contains('{') {
            format!("redisson_unlock_latch:{key}")
        } else {
            format!("redisson_unlock_latch:{{{key}}}")
        };
        Bytes::from(
            format!(
                "{base}:{}-{}",
                self.config.token_prefix, self.unlock_requests
            )
            .as_str(),
        )
    }

    /// Sends (or resends) a call: the EVAL, and the WAIT with replicas.
    fn send_call(&mut self, cx: &mut Cx<'_>, kind: CallKind, sends: u32) -> Call {
        let cmd = self.command_of(kind, sends == 1);
        let eval_id = self.fresh_id();
        cx.send(self.config.redis, Msg::Request { id: eval_id, cmd });
        let wait_id = if self.config.sync_replicas > 0 {
            let id = self.fresh_id();
            let cmd = Command::Wait {
                replicas: i64::from(self.config.sync_replicas),
                timeout_ms: self.config.slaves_sync_timeout_ms as i64,
            };
            cx.send(self.config.redis, Msg::Request { id, cmd });
            id
        } else {
            0
        };
        self.timeout.ensure(cx, self.config.timeout_ns);
        Call {
            kind,
            eval_id,
            wait_id,
            eval_reply: None,
            deadline_mono_ns: cx.mono_ns + self.config.timeout_ns,
            sent_mono_ns: cx.mono_ns,
            sends,
            abandoned: false,
        }
    }

    fn start_attempt(&mut self, cx: &mut Cx<'_>) {
        if self.section.finished() {
            self.phase = Phase::Done;
            return;
        }
        if !self.round_started {
            self.round_started = true;
            cx.observe(Observation::Attempt {
                lock: self.config.lock,
                token: self.lock_name.clone(),
            });
        }
        self.try_acquire(cx);
    }

    fn try_acquire(&mut self, cx: &mut Cx<'_>) {
        self.phase = Phase::Acquiring;
        let call = self.send_call(cx, CallKind::Lock, 1);
        self.main = Some(call);
        match self.config.interrupt_after_ns {
            Some(after) => self.arm(cx, after),
            // A step timer armed before belongs to the wait this try ends.
            None => self.timer_gen += 1,
        }
    }

    fn subscribe(&mut self, cx: &mut Cx<'_>) -> u64 {
        let id = self.fresh_id();
        let cmd = Command::Subscribe {
            names: vec![self.channel.clone()],
            pattern: false,
        };
        cx.send(self.config.redis, Msg::Request { id, cmd });
        self.subscribed = true;
        id
    }

    fn unsubscribe(&mut self, cx: &mut Cx<'_>) {
        if std::mem::take(&mut self.subscribed) {
            let id = self.fresh_id();
            let cmd = Command::Unsubscribe {
                names: vec![self.channel.clone()],
                pattern: false,
            };
            cx.send(self.config.redis, Msg::Request { id, cmd });
        }
        self.permit = false;
    }

    /// `lock()` threw: the caller tries again after `retry`.
    fn lock_failed(&mut self, cx: &mut Cx<'_>) {
        self.unsubscribe(cx);
        self.phase = Phase::Pausing;
        let r = self.config.retry;
        let d = cx.rng.range_inclusive(r.min, r.max);
        self.arm(cx, d);
    }

    fn acquired(&mut self, cx: &mut Cx<'_>, fence: Option<u64>) {
        self.unsubscribe(cx);
        self.round_started = false;
        self.holding = true;
        cx.observe(Observation::Acquired {
            lock: self.config.lock,
            token: self.lock_name.clone(),
            fence,
            validity_ns: Some(self.lease_ms() * NS_PER_MS),
            believed_until: None,
        });
        if self.config.lease_ms.is_none() {
            self.start_renewal(cx);
        }
        self.enter_section(cx, fence);
    }

    /// scheduleExpirationRenewal: a lock name already renewed is only counted again.
    fn start_renewal(&mut self, cx: &mut Cx<'_>) {
        if self.renewal == Renewal::Off {
            self.schedule_renewal(cx);
        }
    }

    fn schedule_renewal(&mut self, cx: &mut Cx<'_>) {
        self.renewal = Renewal::Scheduled;
        self.renew_gen += 1;
        let d = self.config.renewal_delay;
        let extra = if d.max == 0 {
            0
        } else {
            cx.rng.range_inclusive(d.min, d.max)
        };
        Timer::Background(self.renew_gen)
            .set(cx, self.config.watchdog_timeout_ms / 3 * NS_PER_MS + extra);
    }

    fn cancel_renewal(&mut self) {
        self.renewal = Renewal::Off;
        self.renew_call = None;
        self.renew_gen += 1;
    }

    fn on_lock_result(
        &mut self,
        cx: &mut Cx<'_>,
        abandoned: bool,
        result: Result<Reply, CallError>,
    ) {
        // RFencedLock's `{-1, token}` / `{pttl, -1}` read as the plain lock's nil / pttl.
        let (result, fence) = match result {
            Ok(Reply::Array(v)) if self.config.fenced && v.len() == 2 => match (&v[0], &v[1]) {
                (Reply::Int(-1), Reply::Int(t)) => (Ok(Reply::Nil), u64::try_from(*t).ok()),
                (Reply::Int(ttl), _) => (Ok(Reply::Int(*ttl)), None),
                _ => (Ok(Reply::Array(v)), None),
            },
            r => (r, None),
        };
        if abandoned {
            // The caller is gone; the acquire's callback still runs (3.52.0
            // RedissonLock.java:196-203).
            if result == Ok(Reply::Nil) {
                if self.config.late_acquire_unlocks {
                    let call = self.send_call(cx, CallKind::Unlock, 1);
                    self.main = Some(Call {
                        abandoned: true,
                        ..call
                    });
                } else if self.config.lease_ms.is_none() {
                    self.start_renewal(cx);
                }
            }
            return;
        }
        match result {
            Ok(Reply::Nil) => self.acquired(cx, fence),
            Ok(Reply::Int(ttl)) => {
                if !self.subscribed {
                    self.phase = Phase::Subscribing;
                    self.subscribe_id = self.subscribe(cx);
                    self.timer_gen += 1;
                    return;
                }
                self.phase = Phase::Waiting;
                if std::mem::take(&mut self.permit) {
                    self.try_acquire(cx);
                } else if ttl >= 0 {
                    self.arm(cx, ttl as u64 * NS_PER_MS);
                } else {
                    // A key without a TTL: wait for the message alone.
                    self.timer_gen += 1;
                }
            }
            Ok(_) | Err(_) => {
                if let Err(CallError::NoSyncedSlaves) = result
                    && self.config.version.undoes_unsynced_lock()
                    && self.main.is_none()
                {
                    // handleNoSync of 3.52.0 undoes the lock it could not see replicated.
                    let call = self.send_call(cx, CallKind::Unlock, 1);
                    self.main = Some(Call {
                        abandoned: true,
                        ..call
                    });
                }
                self.lock_failed(cx);
            }
        }
    }

    fn on_unlock_result(
        &mut self,
        cx: &mut Cx<'_>,
        abandoned: bool,
        result: Result<Reply, CallError>,
    ) {
        // cancelExpirationRenewal runs on every outcome (RedissonBaseLock.java:290-291).
        self.cancel_renewal();
        if let Ok(Reply::Int(_)) = result {
            // The unlock latch is deleted after the reply (RedissonBaseLock.java:351-361).
            let id = self.fresh_id();
            let cmd = Command::Del(vec![self.unlock_latch()]);
            cx.send(self.config.redis, Msg::Request { id, cmd });
        }
        if !abandoned && self.phase == Phase::Releasing {
            self.think(cx);
        }
    }

    fn on_renew_result(&mut self, cx: &mut Cx<'_>, result: Result<Reply, CallError>) {
        let renewed = match &result {
            Ok(Reply::Int(1)) => Some(true),
            Ok(Reply::Array(v)) if v.first() == Some(&Reply::Int(1)) => Some(true),
            Ok(Reply::Int(0)) | Ok(Reply::Array(_)) => Some(false),
            _ => None,
        };
        match renewed {
            Some(true) => {
                if self.holding {
                    cx.observe(Observation::Extended {
                        lock: self.config.lock,
                        token: self.lock_name.clone(),
                        validity_ns: Some(self.lease_ms() * NS_PER_MS),
                        believed_until: None,
                    });
                }
                self.schedule_renewal(cx);
            }
            // The hash field is gone: renewal is cancelled (LockTask.java:85-89).
            Some(false) => self.cancel_renewal(),
            None if self.config.version.renews_after_error() => self.schedule_renewal(cx),
            // 3.43: `EXPIRATION_RENEWAL_MAP.remove`, and nothing reschedules it.
            None => self.cancel_renewal(),
        }
    }

    /// A reply to one of the call's requests.
    fn on_call_reply(&mut self, cx: &mut Cx<'_>, renew: bool, id: u64, reply: Reply) {
        let slot = if renew {
            &mut self.renew_call
        } else {
            &mut self.main
        };
        let Some(call) = slot.as_mut() else { return };
        let result = if id == call.eval_id {
            if call.wait_id != 0 {
                call.eval_reply = Some(reply);
                return;
            }
            match reply {
                Reply::Error(e) => Err(CallError::Reply(e)),
                r => Ok(r),
            }
        } else {
            // The WAIT: the batch completes with it.
            let eval = call.eval_reply.take().unwrap_or(Reply::Nil);
            match (eval, reply) {
                (Reply::Error(e), _) => Err(CallError::Reply(e)),
                (_, Reply::Int(0)) => Err(CallError::NoSyncedSlaves),
                (r, _) => Ok(r),
            }
        };
        let call = slot.take().expect("present");
        self.complete(cx, call, result);
    }

    fn complete(&mut self, cx: &mut Cx<'_>, call: Call, result: Result<Reply, CallError>) {
        match call.kind {
            CallKind::Lock => self.on_lock_result(cx, call.abandoned, result),
            CallKind::Unlock => self.on_unlock_result(cx, call.abandoned, result),
            CallKind::Renew => self.on_renew_result(cx, result),
        }
    }

    /// A send of a call was refused: the node was killed on a host that stayed up.
    ///
    /// Redisson's RedisExecutor (3.43.0; 3.44.0 the same, 3.52.0 with its retry delay drawn
    /// per attempt at :174) fails such an attempt at once — the write to the closed channel
    /// or the new connection fails (`checkWriteFuture` :366-382, the connection future
    /// :184-188) — and, `retryAttempts` not used up, does not resend then (`tryComplete`
    /// :398-412 resends at once only with `retryInterval` 0). The retry timer armed when the
    /// attempt started (`scheduleRetryTimeout`, :170, :269-353) sends it again
    /// `retryInterval` after that start; at the last attempt the failure completes the
    /// command (:399-400). The response timeout (:414-476) is never reached: it is armed
    /// only once the write succeeded (:384). `noRetry` (the lock and unlock scripts) stops
    /// only that response-timeout resend (`isResendAllowed` :478-482), not the retry
    /// timer, so every call is resent here. With the defaults a renewal whose node stays
    /// down fails 3 × 1.5 s = 4.5 s after its first send, not after 4 × (3 s + 1.5 s).
    fn on_refused(&mut self, cx: &mut Cx<'_>, renew: bool, id: u64) {
        let slot = if renew {
            &mut self.renew_call
        } else {
            &mut self.main
        };
        let Some(call) = slot.take_if(|c| id == c.eval_id || id == c.wait_id) else {
            return;
        };
        if call.sends > self.config.version.retry_attempts() {
            if renew {
                self.renewal = Renewal::InFlight;
            }
            return self.complete(cx, call, Err(CallError::Refused));
        }
        let r = self.config.version.retry_delay(call.sends - 1);
        let d = cx.rng.range_inclusive(r.min, r.max);
        let after = (call.sent_mono_ns + d).saturating_sub(cx.mono_ns);
        if renew {
            self.renewal = Renewal::Resending;
            self.renew_gen += 1;
            self.renew_sends = call.sends;
            Timer::Background(self.renew_gen).set(cx, after);
        } else {
            self.main_resend = Some((call.kind, call.sends, call.abandoned));
            self.main_resend_gen += 1;
            Timer::Background(MAIN_RESEND_BIT | self.main_resend_gen).set(cx, after);
        }
    }

    fn on_timeout_timer(&mut self, cx: &mut Cx<'_>) {
        let now = cx.mono_ns;
        let main_expired = self
            .main
            .as_ref()
            .is_some_and(|c| now >= c.deadline_mono_ns);
        let renew_expired = self
            .renew_call
            .as_ref()
            .is_some_and(|c| now >= c.deadline_mono_ns);
        let main = if main_expired { self.main.take() } else { None };
        let renew = if renew_expired {
            self.renew_call.take()
        } else {
            None
        };
        let earliest = [&self.main, &self.renew_call]
            .into_iter()
            .flatten()
            .map(|c| c.deadline_mono_ns)
            .chain(self.resource_deadline_mono_ns)
            .min();
        self.timeout.fired_then_arm_for(cx, earliest);
        if let Some(call) = main {
            // Lock and unlock are sent without retries.
            self.complete(cx, call, Err(CallError::Timeout));
        }
        if let Some(call) = renew {
            if call.sends <= self.config.version.retry_attempts() {
                // RedisExecutor.java:445-461: a response timeout resends after the delay.
                self.renewal = Renewal::Resending;
                self.renew_gen += 1;
                let r = self.config.version.retry_delay(call.sends - 1);
                let d = cx.rng.range_inclusive(r.min, r.max);
                Timer::Background(self.renew_gen).set(cx, d);
                self.renew_sends = call.sends;
            } else {
                self.renewal = Renewal::InFlight;
                self.on_renew_result(cx, Err(CallError::Timeout));
            }
        }
    }
}

impl SectionHost for RedissonClient {
    fn section(&mut self) -> &mut Section {
        &mut self.section
    }

    fn token(&self) -> Bytes {
        self.lock_name.clone()
    }

    fn resource_request_id(&mut self) -> u64 {
        self.timer_gen += 1;
        let id = self.fresh_id();
        self.resource_id = id;
        id
    }

    fn await_resource(&mut self, cx: &mut Cx<'_>, _id: u64) {
        self.resource_deadline_mono_ns = Some(cx.mono_ns + self.config.timeout_ns);
        self.timeout.ensure(cx, self.config.timeout_ns);
    }

    fn arm_step(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        self.resource_id = 0;
        self.resource_deadline_mono_ns = None;
        self.arm(cx, after_ns);
    }

    fn enter_phase_section(&mut self) {
        self.phase = Phase::Section;
    }

    fn enter_phase_waiting(&mut self) {
        self.phase = Phase::Pausing;
    }

    fn release_lock(&mut self, cx: &mut Cx<'_>) {
        self.holding = false;
        self.resource_id = 0;
        self.resource_deadline_mono_ns = None;
        self.phase = Phase::Releasing;
        self.timer_gen += 1;
        let call = self.send_call(cx, CallKind::Unlock, 1);
        self.main = Some(call);
    }

    fn next_attempt(&mut self, cx: &mut Cx<'_>) {
        self.start_attempt(cx);
    }
}

impl Process for RedissonClient {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        self.start_attempt(cx);
    }

    fn on_message(&mut self, cx: &mut Cx<'_>, _from: ProcId, msg: Msg) {
        match msg {
            Msg::Reply { id, reply } if id != 0 => {
                let of = |c: &Option<Call>| {
                    c.as_ref()
                        .is_some_and(|c| id == c.eval_id || id == c.wait_id)
                };
                if of(&self.renew_call) {
                    self.on_call_reply(cx, true, id, reply);
                } else if of(&self.main) {
                    self.on_call_reply(cx, false, id, reply);
                } else if id == self.subscribe_id {
                    self.subscribe_id = 0;
                    if self.phase == Phase::Subscribing {
                        // Subscribed: the loop's first try (RedissonLock.java:123-125).
                        self.try_acquire(cx);
                    }
                }
            }
            Msg::Refused { id } if id != 0 => {
                let of = |c: &Option<Call>| {
                    c.as_ref()
                        .is_some_and(|c| id == c.eval_id || id == c.wait_id)
                };
                if of(&self.renew_call) {
                    self.on_refused(cx, true, id);
                } else if of(&self.main) {
                    self.on_refused(cx, false, id);
                }
            }
            // `Refused { id: 0 }`, the kernel's reset of the connections of a process killed
            // with its host up, is not acted on: Redisson's CommandsQueue.channelInactive
            // (3.43.0 :50-66) fails only the commands not yet written, and a command already
            // written waits for its response timeout (or for the reconnect's
            // RedisReconnectedException, ConnectionWatchdog :186-205, once the node is back).
            Msg::ResourceAck { id, version, .. } if id != 0 && id == self.resource_id => {
                self.resource_id = 0;
                self.resource_deadline_mono_ns = None;
                if self.phase == Phase::Section {
                    self.on_resource_ack(cx, version);
                }
            }
            Msg::Push {
                reply: Reply::Array(parts),
            } => {
                // ["message", channel, "0"]: LockPubSub.onMessage releases the latch.
                let is_unlock = parts.len() == 3
                    && parts[0] == Reply::Bulk(b"message".to_vec())
                    && parts[1] == Reply::Bulk(self.channel.to_vec())
                    && parts[2] == Reply::Bulk(b"0".to_vec());
                if !is_unlock || !self.subscribed {
                    return;
                }
                if self.phase == Phase::Waiting {
                    self.try_acquire(cx);
                } else {
                    self.permit = true;
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        match Timer::from_tag(tag) {
            Timer::Request => {
                let now = cx.mono_ns;
                if self.resource_deadline_mono_ns.is_some_and(|d| now >= d) {
                    self.resource_deadline_mono_ns = None;
                    self.resource_id = 0;
                    // The other deadlines are settled (and the timer re-armed) below.
                    self.on_timeout_timer(cx);
                    if self.phase == Phase::Section {
                        self.on_resource_timeout(cx);
                    }
                } else {
                    self.on_timeout_timer(cx);
                }
            }
            Timer::Background(g) if g == MAIN_RESEND_BIT | self.main_resend_gen => {
                if let Some((kind, sends, abandoned)) = self.main_resend.take() {
                    let call = self.send_call(cx, kind, sends + 1);
                    self.main = Some(Call { abandoned, ..call });
                }
            }
            Timer::Background(g) if g == self.renew_gen => match self.renewal {
                Renewal::Scheduled
                    if !self.raced
                        && self
                            .config
                            .racing_unlock_at_ns
                            .is_some_and(|t| cx.mono_ns >= t) =>
                {
                    // redisson#6472: another thread's unlock removed the entry this pass was
                    // about to read. 3.44.0-3.45.0 throw out of the timer task, which nothing
                    // schedules again while this lock is held; later versions skip the entry.
                    self.raced = true;
                    if self.config.version.pass_dies_on_vanished_entry() {
                        self.cancel_renewal();
                    } else {
                        self.renewal = Renewal::InFlight;
                        let call = self.send_call(cx, CallKind::Renew, 1);
                        self.renew_call = Some(call);
                    }
                }
                Renewal::Scheduled => {
                    self.renewal = Renewal::InFlight;
                    let call = self.send_call(cx, CallKind::Renew, 1);
                    self.renew_call = Some(call);
                }
                Renewal::Resending => {
                    self.renewal = Renewal::InFlight;
                    let call = self.send_call(cx, CallKind::Renew, self.renew_sends + 1);
                    self.renew_call = Some(call);
                }
                Renewal::Off | Renewal::InFlight => {}
            },
            Timer::Background(_) => {}
            Timer::Step(g) if g == self.timer_gen => match self.phase {
                Phase::Section => self.on_hold_timer(cx),
                Phase::Pausing => self.start_attempt(cx),
                Phase::Waiting => {
                    // The wait ran out: subscribe again (idempotent) and try.
                    self.subscribe(cx);
                    self.try_acquire(cx);
                }
                Phase::Acquiring => {
                    // Interrupted: lock() leaves with InterruptedException and the thread
                    // ends; the lock script's reply may still come.
                    if let Some(c) = self.main.as_mut() {
                        c.abandoned = true;
                    }
                    if let Some((_, _, abandoned)) = self.main_resend.as_mut() {
                        *abandoned = true;
                    }
                    self.unsubscribe(cx);
                    cx.observe(Observation::GaveUp {
                        lock: self.config.lock,
                    });
                    self.round_started = false;
                    self.phase = Phase::Done;
                }
                Phase::Idle | Phase::Subscribing | Phase::Releasing | Phase::Done => {}
            },
            Timer::Step(_) => {}
        }
    }

    fn on_restart(&mut self, _keep_data: bool) {
        self.phase = Phase::Idle;
        self.section.abandon();
        self.round_started = false;
        self.holding = false;
        self.subscribed = false;
        self.subscribe_id = 0;
        self.permit = false;
        self.main = None;
        self.main_resend = None;
        self.main_resend_gen += 1;
        self.resource_id = 0;
        self.resource_deadline_mono_ns = None;
        self.cancel_renewal();
        self.timeout.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Resource;
    use crate::clock::NodeClock;
    use crate::history::{Record, Removal};
    use crate::net::LinkSpec;
    use crate::redis::{RedisConfig, RedisProcess};
    use crate::rng::{Ratio, Seed};
    use crate::sim::{Actor, Fault, FaultKind, Limits, ProcSpec, TraceMode, World};
    use crate::time::{NS_PER_S, SimTime};

    const REDIS: ProcId = ProcId(0);
    const RESOURCE: ProcId = ProcId(1);
    const A: ProcId = ProcId(2);
    const B: ProcId = ProcId(3);

    fn config(prefix: &str, hold_s: u64, version: RedissonVersion) -> RedissonConfig {
        RedissonConfig {
            resource: Some(RESOURCE),
            hold: NsRange::fixed(hold_s * NS_PER_S),
            retry: NsRange::fixed(NS_PER_S),
            rounds: Some(1),
            ..RedissonConfig::new(0, Bytes::from("lock"), REDIS, version, prefix)
        }
    }

    /// Redis, the resource and two Redisson clients on 1 ms links; A starts first.
    fn world(a: RedissonConfig, b: RedissonConfig, run_s: u64) -> World {
        world_with(a, b, run_s, RedisConfig::default())
    }

    fn world_with(a: RedissonConfig, b: RedissonConfig, run_s: u64, redis: RedisConfig) -> World {
        let clock = || NodeClock::new(1_700_000_000_000, 0, 0);
        let spec = |name: &str, actor: Actor, start_at: SimTime| ProcSpec {
            name: name.into(),
            actor,
            clock: clock(),
            start_at,
        };
        let procs = vec![
            spec(
                "redis",
                Actor::Redis(Box::new(RedisProcess::new(redis))),
                SimTime::ZERO,
            ),
            spec(
                "resource",
                Actor::Resource(Resource::new(false)),
                SimTime::ZERO,
            ),
            spec(
                "a",
                Actor::Redisson(Box::new(RedissonClient::new(a))),
                SimTime::ZERO,
            ),
            spec(
                "b",
                Actor::Redisson(Box::new(RedissonClient::new(b))),
                SimTime(100 * NS_PER_MS),
            ),
        ];
        let limits = Limits {
            max_time: SimTime(run_s * NS_PER_S),
            max_events: 100_000,
        };
        let link = LinkSpec::new(NS_PER_MS, NS_PER_MS, Ratio::NEVER);
        World::new(Seed(1), limits, link, procs, TraceMode::Off)
    }

    fn at_of(w: &World, p: ProcId, pred: impl Fn(&Observation) -> bool) -> Vec<SimTime> {
        w.history
            .records
            .iter()
            .filter(|r: &&Record| r.proc == p && pred(&r.obs))
            .map(|r| r.at)
            .collect()
    }

    fn expired(w: &World) -> usize {
        w.history
            .records
            .iter()
            .filter(|r| {
                matches!(
                    r.obs,
                    Observation::KeyRemoved {
                        how: Removal::Expired,
                        ..
                    }
                )
            })
            .count()
    }

    #[test]
    fn a_waiter_wakes_on_the_unlock_message_not_at_the_end_of_its_ttl_wait() {
        let mut w = world(
            config("a", 2, RedissonVersion::V3_52),
            config("b", 1, RedissonVersion::V3_52),
            40,
        );
        w.run();
        let a_released = at_of(&w, A, |o| matches!(o, Observation::Released { .. }));
        let b_acquired = at_of(&w, B, |o| matches!(o, Observation::Acquired { .. }));
        assert_eq!((a_released.len(), b_acquired.len()), (1, 1));
        // B got PTTL ~29.9 s, subscribed and waited; the unlock's PUBLISH woke it: a few
        // one-way delays after A's release, far before its 30 s wait would end.
        let gap = b_acquired[0].as_ns() - a_released[0].as_ns();
        assert!(gap < 10 * NS_PER_MS, "woken {gap} ns after the release");
        assert_eq!(expired(&w), 0);
    }

    #[test]
    fn callers_sharing_one_thread_id_both_get_the_lock_as_a_reentry() {
        // redisson#4467: one `uuid:threadId` for both; B's script finds the field and
        // re-enters while A holds (A 2 s, B from 100 ms).
        let shared = |prefix: &str, hold_s: u64| RedissonConfig {
            lock_owner: Some("p".into()),
            ..config(prefix, hold_s, RedissonVersion::V3_52)
        };
        let mut w = world(shared("a", 2), shared("b", 1), 40);
        w.run();
        let a_acquired = at_of(&w, A, |o| matches!(o, Observation::Acquired { .. }));
        let a_released = at_of(&w, A, |o| matches!(o, Observation::Released { .. }));
        let b_acquired = at_of(&w, B, |o| matches!(o, Observation::Acquired { .. }));
        assert_eq!((a_acquired.len(), b_acquired.len()), (1, 1));
        assert!(b_acquired[0] < a_released[0], "B re-entered while A held");
        // Each its own name: B waits for A's unlock.
        let mut w = world(
            config("a", 2, RedissonVersion::V3_52),
            config("b", 1, RedissonVersion::V3_52),
            40,
        );
        w.run();
        let a_released = at_of(&w, A, |o| matches!(o, Observation::Released { .. }));
        let b_acquired = at_of(&w, B, |o| matches!(o, Observation::Acquired { .. }));
        assert!(b_acquired[0] > a_released[0]);
    }

    #[test]
    fn a_pass_racing_another_unlock_ends_the_watchdog_in_3_44_and_not_in_3_45_1() {
        // redisson#6472: A holds 45 s; its pass at 20 s meets the racing unlock.
        let run = |version| {
            let racing = RedissonConfig {
                racing_unlock_at_ns: Some(15 * NS_PER_S),
                ..config("a", 45, version)
            };
            let mut w = world(racing, config("b", 1, version), 80);
            w.run();
            let a_released = at_of(&w, A, |o| matches!(o, Observation::Released { .. }));
            let b_acquired = at_of(&w, B, |o| matches!(o, Observation::Acquired { .. }));
            (a_released[0], b_acquired[0])
        };
        let (a_released, b_acquired) = run(RedissonVersion::V3_44);
        // Renewed at 10 s only: the key expires at ~40 s, under A.
        assert!(b_acquired < a_released);
        assert!(b_acquired.as_ns() / NS_PER_S == 40, "{b_acquired:?}");
        let (a_released, b_acquired) = run(RedissonVersion::V3_45_1);
        assert!(b_acquired > a_released);
    }

    #[test]
    fn a_waiter_cut_off_when_the_unlock_is_published_falls_back_to_its_ttl_wait() {
        // Redis → B is cut from 1.5 s to 2.5 s: A's unlock at ~2 s PUBLISHes to B, the push is
        // dropped, and B wakes only when the wait for the PTTL it got at ~0.1 s ends (~30 s).
        let mut w = world(
            config("a", 2, RedissonVersion::V3_52),
            config("b", 1, RedissonVersion::V3_52),
            40,
        );
        w.schedule(Fault::new(
            SimTime(1_500 * NS_PER_MS),
            Some(NS_PER_S),
            FaultKind::Partition {
                from: vec![REDIS],
                to: vec![B],
                both_ways: false,
            },
        ));
        w.run();
        let a_released = at_of(&w, A, |o| matches!(o, Observation::Released { .. }));
        let b_acquired = at_of(&w, B, |o| matches!(o, Observation::Acquired { .. }));
        assert!(a_released[0] < SimTime(2_500 * NS_PER_MS), "{a_released:?}");
        let at = b_acquired[0].as_ns() / NS_PER_MS;
        assert!((29_900..30_300).contains(&at), "B acquired at {at} ms");
    }

    #[test]
    fn the_watchdog_renews_every_third_of_the_timeout_and_a_lease_is_never_renewed() {
        let mut w = world(
            config("a", 40, RedissonVersion::V3_43),
            config("b", 1, RedissonVersion::V3_43),
            60,
        );
        w.run();
        let ext = at_of(&w, A, |o| matches!(o, Observation::Extended { .. }));
        assert_eq!(ext.len(), 3, "{ext:?}");
        assert_eq!(expired(&w), 0);
        // With `lock(5 s)` the key expires under the 8 s holder and B takes it.
        let leased = |p, h| RedissonConfig {
            lease_ms: Some(5_000),
            ..config(p, h, RedissonVersion::V3_52)
        };
        let mut w = world(leased("a", 8), leased("b", 1), 30);
        w.run();
        assert!(at_of(&w, A, |o| matches!(o, Observation::Extended { .. })).is_empty());
        assert_eq!(expired(&w), 1);
        let b_acquired = at_of(&w, B, |o| matches!(o, Observation::Acquired { .. }));
        let s = b_acquired[0].as_ns() / NS_PER_MS;
        assert!((5_000..5_100).contains(&s), "B acquired at {s} ms");
    }

    #[test]
    fn the_version_decides_whether_a_failed_renewal_ends_the_watchdog() {
        // A is cut off from Redis from 9.9 s to 15 s: the renewal due at 10 s is sent 4 times
        // (3 resends 1.5 s after each 100 ms timeout), all lost, and fails at ~14.9 s. 3.43.0
        // stops renewing, so the key set at 0 expires at 30 s under the 40 s holder; 3.44.0
        // renews at ~24.9 s and the key lives on.
        for (version, goes_on) in [
            (RedissonVersion::V3_43, false),
            (RedissonVersion::V3_44, true),
        ] {
            let a = RedissonConfig {
                timeout_ns: 100 * NS_PER_MS,
                ..config("a", 40, version)
            };
            let mut w = world(a, config("b", 1, version), 45);
            w.schedule(Fault::new(
                SimTime(9_900 * NS_PER_MS),
                Some(5_100 * NS_PER_MS),
                FaultKind::Partition {
                    from: vec![A],
                    to: vec![REDIS],
                    both_ways: true,
                },
            ));
            w.run();
            let ext = at_of(&w, A, |o| matches!(o, Observation::Extended { .. }));
            if goes_on {
                let first = ext.first().expect("renewed after the cut").as_ns() / NS_PER_MS;
                assert!((24_900..25_100).contains(&first), "renewed at {first} ms");
                assert_eq!(expired(&w), 0, "{}", version.name());
            } else {
                assert!(ext.is_empty(), "{ext:?}");
                assert_eq!(expired(&w), 1, "{}", version.name());
                let b = at_of(&w, B, |o| matches!(o, Observation::Acquired { .. }));
                assert!(b[0] >= SimTime(30 * NS_PER_S), "{b:?}");
            }
        }
        assert_eq!(RedissonVersion::V3_43.retry_attempts(), 3);
        assert_eq!(RedissonVersion::V3_52.retry_attempts(), 4);
        assert_eq!(
            RedissonVersion::V3_52.retry_delay(0),
            NsRange::new(500 * NS_PER_MS, 1_000 * NS_PER_MS)
        );
        assert_eq!(
            RedissonVersion::V3_52.retry_delay(3),
            NsRange::new(1_000 * NS_PER_MS, 2_000 * NS_PER_MS)
        );
    }

    #[test]
    fn a_refused_renewal_is_retried_after_retry_interval_not_after_the_response_timeout() {
        // Redis is killed (host up) from 9.9 s to 26.9 s and keeps its data. A's renewals are
        // refused at once: sent at ~10, 11.5, 13 and 14.5 s (retryInterval from each send's
        // start), failed at ~14.5 s; 3.44.0 renews again 10 s later: refused at ~24.5 and 26
        // s, extended by the send at ~27.5 s. Waiting out the 3 s timeout instead, the
        // renewal would have failed at ~26.5 s and the key expired at 30 s.
        use crate::redis::node::{Fsync, Persistence};
        let mut w = world_with(
            config("a", 40, RedissonVersion::V3_44),
            config("b", 1, RedissonVersion::V3_44),
            45,
            RedisConfig {
                persistence: Persistence::Aof(Fsync::Always),
                ..RedisConfig::default()
            },
        );
        w.schedule(Fault::new(
            SimTime(9_900 * NS_PER_MS),
            Some(17 * NS_PER_S),
            FaultKind::Crash {
                proc: REDIS,
                keep_data: true,
                host_up: true,
            },
        ));
        w.run();
        let ext = at_of(&w, A, |o| matches!(o, Observation::Extended { .. }));
        let first = ext.first().expect("renewed after the kill").as_ns() / NS_PER_MS;
        assert!((27_500..27_600).contains(&first), "renewed at {first} ms");
        assert_eq!(expired(&w), 0);
    }

    #[test]
    fn the_channel_and_the_lock_name_are_named_as_redisson_names_them() {
        let c = RedissonClient::new(config("a", 1, RedissonVersion::V3_52));
        assert_eq!(&c.channel[..], b"redisson_lock__channel:{lock}");
        assert_eq!(&c.lock_name[..], b"a:1");
        let c = RedissonClient::new(RedissonConfig {
            key: Bytes::from("{orders}:lock"),
            ..config("a", 1, RedissonVersion::V3_52)
        });
        assert_eq!(&c.channel[..], b"redisson_lock__channel:{orders}:lock");
    }
}
