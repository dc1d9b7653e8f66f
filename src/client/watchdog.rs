//! A Redisson-style lock with a watchdog: the lock is taken with a lease (Redisson's
//! `lockWatchdogTimeout`, 30 s) and renewed every lease/3 while the holder lives, so a
//! critical section may run far longer than the lease.
//!
//! Work loop as in `single.rs`: acquire (`SET key token NX PX lease`, retry after `retry` on
//! nil) → critical section (read the resource, hold, write it) → release (compare-and-delete
//! script) → think → repeat. While holding, a renewal runs beside the critical section:
//! `renew_every_ms` after the previous renewal's outcome (Redisson chains each renewal on the
//! previous one's completion) the client sends the compare-and-pexpire script.
//!
//! What makes this algorithm interesting is how renewal fails (`watchdog-partition`, `watchdog-pause`):
//! - a renewal that fails is not reported to the holder (Redisson only logs it,
//!   RenewalTask.java:177-180; its opt-in `ExpiredObjectListener` of 3.43.0+ needs keyspace
//!   notifications, which cannot cross the partition that caused the expiry): the holder
//!   keeps working and writes; with `report_renewal_failure` it learns (`Lost`) and ends the
//!   critical section without writing;
//! - a renewal answered 0 (the key is gone or someone else's) stops renewal for good, as
//!   Redisson cancels it; an error or a timeout does not (the next renewal is still sent),
//!   as in Redisson ≥ 3.44.0 (597d604a3); up to 3.43 one error stopped renewal for good
//!   (3.40.0 RedissonBaseLock.java:143-146, redisson#775);
//! - a pause longer than the lease stops renewals (the renewal timer queues with the
//!   process), the key expires, another client takes the lock, and the paused holder resumes
//!   believing it holds.
//!
//! Simplified: Redisson stores a reentrancy hash (`HINCRBY key uuid:threadId 1` after
//! `exists == 0 or hexists`, then `pexpire`: RedissonLock.java:216-222; renewal is `hexists →
//! pexpire`, LockTask.java:84-93) and waits for an
//! unlock on pub/sub; here the key is a plain string holding the token, a waiting client polls
//! after `retry`, and the scripts are the project's compare-and-pexpire/compare-and-delete.
//! Redisson as shipped, with those hashes, pub/sub and its versions' renewal rules, is the
//! `redisson` algorithm (`redisson.rs`); this one keeps its meaning for the models using it.

use std::sync::Arc;

use crate::client::section::{Section, SectionHost};
use crate::client::single::advance_token;
use crate::client::timeout::RequestTimeout;
use crate::client::timer::NsRange;
use crate::client::timer::Timer;
use crate::history::Observation;
use crate::process::{Cx, Process};
use crate::proto::command::{ScriptRef, SetCond, SetExpiry};
use crate::proto::scripts::{EXTEND_SRC, UNLOCK_SRC};
use crate::proto::{Bytes, Command, Msg, Reply, Script};
use crate::time::{NS_PER_MS, ProcId};

/// Redisson's `lockWatchdogTimeout`.
pub const LEASE_MS_DEFAULT: u64 = 30_000;

#[derive(Clone, Debug)]
pub struct WatchdogConfig {
    /// Index of the lock in the model's lock table.
    pub lock: u32,
    pub key: Bytes,
    pub redis: ProcId,
    pub resource: Option<ProcId>,
    /// TTL set at acquisition and by every renewal (`lockWatchdogTimeout`).
    pub lease_ms: u64,
    /// Renewal period, on the client's monotonic clock (Redisson: lease / 3).
    pub renew_every_ms: u64,
    /// Tell the holder when a renewal fails (`Lost`, critical section abandoned). Redisson
    /// does not: false reproduces it.
    pub report_renewal_failure: bool,
    /// Time spent in the critical section between reading and writing the resource; may be
    /// far longer than the lease (renewal keeps the lock).
    pub hold: NsRange,
    /// Time between a release and the next attempt.
    pub think: NsRange,
    /// Delay before retrying a failed attempt.
    pub retry: NsRange,
    /// A request with no reply after this long counts as failed.
    pub request_timeout_ns: u64,
    /// Stop after this many completed critical sections (None = run until the end).
    pub rounds: Option<u64>,
    /// Prefix of this client's tokens (unique per client); the attempt number follows.
    pub token_prefix: String,
}

impl WatchdogConfig {
    /// Redisson's defaults (30 s lease renewed every 10 s, failures not reported, 3 s
    /// request timeout: 3.52.0 BaseConfig.java:59; Redisson also resends, which this client
    /// does not: from 3.48.0 4 times with `EqualJitterDelay(1 s, 2 s)`, :63, 68, e1154e3ec;
    /// up to 3.47.0 3 times a fixed 1.5 s apart, 3.43.0 :62, 64), a 1 s critical section,
    /// 100 ms think and retry.
    pub fn new(lock: u32, key: Bytes, redis: ProcId, token_prefix: &str) -> WatchdogConfig {
        WatchdogConfig {
            lock,
            key,
            redis,
            resource: None,
            lease_ms: LEASE_MS_DEFAULT,
            renew_every_ms: LEASE_MS_DEFAULT / 3,
            report_renewal_failure: false,
            hold: NsRange::fixed(1_000 * NS_PER_MS),
            think: NsRange::fixed(100 * NS_PER_MS),
            retry: NsRange::fixed(100 * NS_PER_MS),
            request_timeout_ns: 3_000 * NS_PER_MS,
            rounds: None,
            token_prefix: token_prefix.into(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// Waiting for the reply to `SET NX PX`.
    Acquiring,
    /// In the critical section; `Section::stage` says where.
    Section,
    /// Waiting for the reply to the unlock script.
    Releasing,
    /// Think or retry timer armed.
    Waiting,
    Done,
}

/// One Redisson-style client.
#[derive(Clone, Debug)]
pub struct WatchdogClient {
    pub config: WatchdogConfig,
    phase: Phase,
    // Invariant: a step timer whose generation differs from `timer_gen` is stale and ignored.
    timer_gen: u64,
    /// Id of the request the current phase waits for (0: none).
    pending_id: u64,
    /// Monotonic deadline of that request.
    deadline_mono_ns: Option<u64>,
    next_id: u64,
    attempt: u64,
    /// The current round has reported its `Attempt` (retries are not reported again).
    round_started: bool,
    section: Section,
    token: Bytes,
    // Invariant: `token` spells `token_prefix-token_attempt` (0: no token made yet).
    token_attempt: u64,
    /// The client believes it holds the lock: from `Acquired` to `Released` or `Lost`.
    holding: bool,
    // Invariant: renewing implies holding. Cleared at release, at a reported failure, and
    // when a renewal is answered 0 (Redisson cancels renewal then).
    renewing: bool,
    // Invariant: a renewal timer (`Timer::Background`) of another generation than
    // `renew_gen` is stale; at most
    // one live renewal timer or renewal request exists at a time.
    renew_gen: u64,
    /// Id of the renewal in flight (0: none).
    renew_id: u64,
    renew_deadline_mono_ns: Option<u64>,
    // Invariant: the pending timeout timer fires no later than the earliest of
    // `deadline_mono_ns` and `renew_deadline_mono_ns` (all requests share one timeout, so a
    // later request's deadline is never earlier than the armed timer).
    timeout: RequestTimeout,
    extend: Script,
    unlock: Script,
    /// `lease_ms` rendered once: the extend script's ARGV[2].
    lease_arg: Bytes,
}

fn draw(range: NsRange, cx: &mut Cx<'_>) -> u64 {
    cx.rng.range_inclusive(range.min, range.max)
}

impl WatchdogClient {
    pub fn new(config: WatchdogConfig) -> WatchdogClient {
        assert!(config.lease_ms > 0 && config.renew_every_ms > 0);
        let lease_arg = Bytes::from(config.lease_ms.to_string().as_str());
        let section = Section::new(
            config.lock,
            config.resource,
            config.hold,
            config.think,
            config.rounds,
        );
        WatchdogClient {
            config,
            phase: Phase::Idle,
            timer_gen: 0,
            pending_id: 0,
            deadline_mono_ns: None,
            next_id: 1,
            attempt: 0,
            round_started: false,
            section,
            token: Bytes::new(),
            token_attempt: 0,
            holding: false,
            renewing: false,
            renew_gen: 0,
            renew_id: 0,
            renew_deadline_mono_ns: None,
            timeout: RequestTimeout::default(),
            extend: Script::new(EXTEND_SRC.as_bytes()),
            unlock: Script::new(UNLOCK_SRC.as_bytes()),
            lease_arg,
        }
    }

    /// Whether the client believes it holds the lock (for tests and timelines).
    pub fn is_holding(&self) -> bool {
        self.holding
    }

    fn lease_ns(&self) -> u64 {
        self.config.lease_ms * NS_PER_MS
    }

    fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Arms a state timer; it supersedes the wait for a reply.
    fn arm(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        self.pending_id = 0;
        self.deadline_mono_ns = None;
        self.timer_gen += 1;
        Timer::Step(self.timer_gen).set(cx, after_ns);
    }

    fn ensure_timeout_timer(&mut self, cx: &mut Cx<'_>) {
        self.timeout.ensure(cx, self.config.request_timeout_ns);
    }

    fn send_main(
        &mut self,
        cx: &mut Cx<'_>,
        phase: Phase,
        to: ProcId,
        msg_of: impl FnOnce(u64) -> Msg,
    ) {
        let id = self.fresh_id();
        self.pending_id = id;
        self.phase = phase;
        // A state timer armed before belongs to the phase this request ends.
        self.timer_gen += 1;
        cx.send(to, msg_of(id));
        self.deadline_mono_ns = Some(cx.mono_ns + self.config.request_timeout_ns);
        self.ensure_timeout_timer(cx);
    }

    fn request(&mut self, cx: &mut Cx<'_>, phase: Phase, cmd: Command) {
        let redis = self.config.redis;
        self.send_main(cx, phase, redis, |id| Msg::Request { id, cmd });
    }

    fn script(&self, script: &Script, args: Vec<Bytes>) -> Command {
        Command::Eval {
            script: ScriptRef::Source(script.clone()),
            keys: Arc::new([self.config.key.clone()]),
            args: args.into(),
            read_only: false,
        }
    }

    fn start_attempt(&mut self, cx: &mut Cx<'_>) {
        if self.section.finished() {
            self.phase = Phase::Done;
            return;
        }
        self.attempt += 1;
        advance_token(
            &mut self.token,
            &mut self.token_attempt,
            &self.config.token_prefix,
            self.attempt,
        );
        if !self.round_started {
            // One observation per round: checkers need to know since when the lock is wanted.
            self.round_started = true;
            cx.observe(Observation::Attempt {
                lock: self.config.lock,
                token: self.token.clone(),
            });
        }
        let cmd = Command::Set {
            key: self.config.key.clone(),
            value: self.token.clone(),
            cond: Some(SetCond::Nx),
            get: false,
            expiry: Some(SetExpiry::Px(self.config.lease_ms as i64)),
        };
        self.request(cx, Phase::Acquiring, cmd);
    }

    fn retry(&mut self, cx: &mut Cx<'_>) {
        self.phase = Phase::Waiting;
        let d = draw(self.config.retry, cx);
        self.arm(cx, d);
    }

    fn acquired(&mut self, cx: &mut Cx<'_>) {
        self.round_started = false;
        self.holding = true;
        cx.observe(Observation::Acquired {
            lock: self.config.lock,
            token: self.token.clone(),
            fence: None,
            validity_ns: Some(self.lease_ns()),
            believed_until: None,
        });
        self.renewing = true;
        self.schedule_renewal(cx);
        // No fencing token: Redisson's RLock hands out none (RFencedLock does, an INCR on
        // the same Redis).
        self.enter_section(cx, None);
    }

    fn stop_renewal(&mut self) {
        self.renewing = false;
        self.renew_id = 0;
        self.renew_deadline_mono_ns = None;
    }

    fn schedule_renewal(&mut self, cx: &mut Cx<'_>) {
        self.renew_gen += 1;
        Timer::Background(self.renew_gen).set(cx, self.config.renew_every_ms * NS_PER_MS);
    }

    fn send_renewal(&mut self, cx: &mut Cx<'_>) {
        debug_assert!(self.renewing && self.holding && self.renew_id == 0);
        let id = self.fresh_id();
        self.renew_id = id;
        let cmd = self.script(
            &self.extend,
            vec![self.token.clone(), self.lease_arg.clone()],
        );
        cx.send(self.config.redis, Msg::Request { id, cmd });
        self.renew_deadline_mono_ns = Some(cx.mono_ns + self.config.request_timeout_ns);
        self.ensure_timeout_timer(cx);
    }

    fn on_renewal_reply(&mut self, cx: &mut Cx<'_>, reply: Reply) {
        match reply {
            Reply::Int(1) => {
                cx.observe(Observation::Extended {
                    lock: self.config.lock,
                    token: self.token.clone(),
                    validity_ns: Some(self.lease_ns()),
                    believed_until: None,
                });
                self.schedule_renewal(cx);
            }
            // The key is gone or holds another token: renewing cannot help.
            Reply::Int(0) => self.renewal_failed(cx, true),
            _ => self.renewal_failed(cx, false),
        }
    }

    /// `give_up`: stop renewing (the key is not ours any more).
    fn renewal_failed(&mut self, cx: &mut Cx<'_>, give_up: bool) {
        if self.config.report_renewal_failure {
            self.report_lost(cx, "renewal failed");
            // The critical section ends here, without its write; a reply to a resource
            // operation in flight is ignored (`think` re-arms and clears `pending_id`).
            self.holding = false;
            self.stop_renewal();
            self.think(cx);
        } else if give_up {
            // Silent, as in Redisson: the holder keeps working on a lock it no longer has.
            self.stop_renewal();
        } else {
            self.schedule_renewal(cx);
        }
    }

    /// The request the current phase waits for got no reply in time.
    fn request_timed_out(&mut self, cx: &mut Cx<'_>) {
        match self.phase {
            // The SET may have succeeded on the server; the client cannot know, so it
            // retries with a new token (the orphan key expires with its lease).
            Phase::Acquiring => self.retry(cx),
            // An unanswered read gives the lock back unwritten, an unanswered write releases.
            Phase::Section => self.on_resource_timeout(cx),
            Phase::Releasing => self.think(cx),
            Phase::Idle | Phase::Waiting | Phase::Done => {}
        }
    }

    fn on_timeout_timer(&mut self, cx: &mut Cx<'_>) {
        let now = cx.mono_ns;
        let expired = |d: Option<u64>| d.is_some_and(|d| now >= d);
        let main_expired = expired(self.deadline_mono_ns);
        let renew_expired = expired(self.renew_deadline_mono_ns);
        if main_expired {
            self.deadline_mono_ns = None;
            self.pending_id = 0;
        }
        if renew_expired {
            self.renew_deadline_mono_ns = None;
            self.renew_id = 0;
        }
        // Re-arm for what still runs before reacting: requests the reactions send then
        // find the timer armed no later than their own deadlines.
        let earliest = [self.deadline_mono_ns, self.renew_deadline_mono_ns]
            .into_iter()
            .flatten()
            .min();
        self.timeout.fired_then_arm_for(cx, earliest);
        if main_expired {
            self.request_timed_out(cx);
        }
        // The main reaction may have released the lock, which ends renewal.
        if renew_expired && self.renewing {
            self.renewal_failed(cx, false);
        }
    }
}

impl SectionHost for WatchdogClient {
    fn section(&mut self) -> &mut Section {
        &mut self.section
    }

    fn token(&self) -> Bytes {
        self.token.clone()
    }

    fn resource_request_id(&mut self) -> u64 {
        let id = self.fresh_id();
        self.pending_id = id;
        // A state timer armed before belongs to the phase this request ends.
        self.timer_gen += 1;
        id
    }

    fn await_resource(&mut self, cx: &mut Cx<'_>, _id: u64) {
        self.deadline_mono_ns = Some(cx.mono_ns + self.config.request_timeout_ns);
        self.ensure_timeout_timer(cx);
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
        self.holding = false;
        self.stop_renewal();
        let cmd = self.script(&self.unlock, vec![self.token.clone()]);
        self.request(cx, Phase::Releasing, cmd);
    }

    fn next_attempt(&mut self, cx: &mut Cx<'_>) {
        self.start_attempt(cx);
    }
}

impl Process for WatchdogClient {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        self.start_attempt(cx);
    }

    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        match msg {
            Msg::Reply { id, reply } if id != 0 && id == self.renew_id => {
                self.renew_id = 0;
                self.renew_deadline_mono_ns = None;
                self.on_renewal_reply(cx, reply);
            }
            Msg::Reply { id, reply } if id != 0 && id == self.pending_id => {
                self.pending_id = 0;
                self.deadline_mono_ns = None;
                match self.phase {
                    Phase::Acquiring if reply == Reply::Ok => self.acquired(cx),
                    // Nil: held by another client; an error: try again later as well.
                    Phase::Acquiring => self.retry(cx),
                    Phase::Releasing => self.think(cx),
                    _ => {}
                }
            }
            // A crashed node's host refused the connection: the same failure as a timeout,
            // learnt at once.
            Msg::Refused { id } if id != 0 && id == self.renew_id => {
                self.renew_id = 0;
                self.renew_deadline_mono_ns = None;
                if self.renewing {
                    self.renewal_failed(cx, false);
                }
            }
            Msg::Refused { id } if id != 0 && id == self.pending_id => {
                self.pending_id = 0;
                self.deadline_mono_ns = None;
                self.request_timed_out(cx);
            }
            // The node was killed with its host up: the kernel reset the connection, and
            // every request in flight on it fails at once, as a refusal does.
            Msg::Refused { id: 0 } if from == self.config.redis => {
                if self.renew_id != 0 && self.renewing {
                    self.renew_id = 0;
                    self.renew_deadline_mono_ns = None;
                    self.renewal_failed(cx, false);
                }
                if self.pending_id != 0 && matches!(self.phase, Phase::Acquiring | Phase::Releasing)
                {
                    self.pending_id = 0;
                    self.deadline_mono_ns = None;
                    self.request_timed_out(cx);
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
                if g == self.renew_gen && self.renewing {
                    self.send_renewal(cx);
                }
            }
            Timer::Step(g) if g == self.timer_gen => match self.phase {
                Phase::Section => self.on_hold_timer(cx),
                Phase::Waiting => self.start_attempt(cx),
                _ => {}
            },
            Timer::Step(_) => {}
        }
    }

    fn on_restart(&mut self, _keep_data: bool) {
        // The loop voids timers of the previous incarnation; generations keep counting.
        self.phase = Phase::Idle;
        self.section.abandon();
        self.pending_id = 0;
        self.deadline_mono_ns = None;
        self.round_started = false;
        self.holding = false;
        self.stop_renewal();
        self.timeout.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{longest_overlap_ns, resource_safety};
    use crate::client::Resource;
    use crate::clock::NodeClock;
    use crate::history::{Record, Removal};
    use crate::net::LinkSpec;
    use crate::process::Output;
    use crate::redis::{RedisConfig, RedisProcess};
    use crate::rng::{Prng, Ratio, Seed};
    use crate::sim::{Actor, Fault, FaultKind, Limits, ProcSpec, TraceMode, World};
    use crate::time::{NS_PER_S, SimTime};

    const REDIS: ProcId = ProcId(0);
    const RESOURCE: ProcId = ProcId(1);
    const A: ProcId = ProcId(2);
    const B: ProcId = ProcId(3);

    fn config(prefix: &str, hold_s: u64) -> WatchdogConfig {
        WatchdogConfig {
            resource: Some(RESOURCE),
            hold: NsRange::fixed(hold_s * NS_PER_S),
            retry: NsRange::fixed(NS_PER_S),
            rounds: Some(1),
            ..WatchdogConfig::new(0, Bytes::from("lock"), REDIS, prefix)
        }
    }

    /// Redis, the resource (no fencing: RLock has no tokens) and two watchdog clients
    /// on 1 ms links; A starts first, so it takes the lock.
    fn world(a: WatchdogConfig, b: WatchdogConfig, run_s: u64) -> World {
        let clock = || NodeClock::new(1_700_000_000_000, 0, 0);
        let procs = vec![
            ProcSpec {
                name: "redis".into(),
                actor: Actor::Redis(Box::new(RedisProcess::new(RedisConfig::default()))),
                clock: clock(),
                start_at: crate::time::SimTime::ZERO,
            },
            ProcSpec {
                name: "resource".into(),
                actor: Actor::Resource(Resource::new(false)),
                clock: clock(),
                start_at: crate::time::SimTime::ZERO,
            },
            ProcSpec {
                name: "a".into(),
                actor: Actor::Custom(Box::new(WatchdogClient::new(a))),
                clock: clock(),
                start_at: crate::time::SimTime::ZERO,
            },
            ProcSpec {
                name: "b".into(),
                actor: Actor::Custom(Box::new(WatchdogClient::new(b))),
                clock: clock(),
                start_at: crate::time::SimTime::ZERO,
            },
        ];
        let limits = Limits {
            max_time: SimTime(run_s * NS_PER_S),
            max_events: 100_000,
        };
        let link = LinkSpec::new(NS_PER_MS, NS_PER_MS, Ratio::NEVER);
        World::new(Seed(1), limits, link, procs, TraceMode::Off)
    }

    fn of(w: &World, p: ProcId) -> Vec<&Record> {
        w.history.records.iter().filter(|r| r.proc == p).collect()
    }

    fn at_of(w: &World, p: ProcId, pred: impl Fn(&Observation) -> bool) -> Vec<SimTime> {
        of(w, p)
            .into_iter()
            .filter(|r| pred(&r.obs))
            .map(|r| r.at)
            .collect()
    }

    fn name(p: ProcId) -> String {
        format!("p{}", p.0)
    }

    #[test]
    fn renewal_every_10s_keeps_a_40s_critical_section_valid() {
        let mut w = world(config("a", 40), config("b", 1), 60);
        w.run();
        let extended: Vec<&Record> = of(&w, A)
            .into_iter()
            .filter(|r| matches!(r.obs, Observation::Extended { .. }))
            .collect();
        // Renewals at ~10, ~20 and ~30 s; the hold ends at ~40 s, before a fourth.
        assert_eq!(extended.len(), 3, "{extended:?}");
        for (i, r) in extended.iter().enumerate() {
            let s = r.at.as_ns() / NS_PER_S;
            assert_eq!(s, 10 * (i as u64 + 1), "renewal {i} at {}", r.at);
            assert!(matches!(
                r.obs,
                Observation::Extended { validity_ns: Some(v), .. } if v == 30 * NS_PER_S
            ));
        }
        let a_released = at_of(&w, A, |o| matches!(o, Observation::Released { .. }));
        assert_eq!(a_released.len(), 1);
        assert!(a_released[0] >= SimTime(40 * NS_PER_S));
        // The key never expired under A: B had to wait for the release.
        assert!(!w.history.records.iter().any(|r| matches!(
            r.obs,
            Observation::KeyRemoved {
                how: Removal::Expired,
                ..
            }
        )));
        let b_acquired = at_of(&w, B, |o| matches!(o, Observation::Acquired { .. }));
        assert_eq!(b_acquired.len(), 1);
        assert!(b_acquired[0] > a_released[0]);
        assert_eq!(longest_overlap_ns(&w.history), 0);
        assert_eq!(resource_safety(&w.history, &name), None);
        assert!(
            !of(&w, A)
                .iter()
                .any(|r| matches!(r.obs, Observation::Lost { .. }))
        );
    }

    #[test]
    fn without_renewal_the_40s_critical_section_outlives_its_lease() {
        // The control for the test above: renewal is what kept the lock.
        let a = WatchdogConfig {
            renew_every_ms: 1_000_000,
            ..config("a", 40)
        };
        let mut w = world(a, config("b", 1), 60);
        w.run();
        let b_acquired = at_of(&w, B, |o| matches!(o, Observation::Acquired { .. }));
        assert!(b_acquired[0] < SimTime(32 * NS_PER_S), "{b_acquired:?}");
        assert!(longest_overlap_ns(&w.history) > 0);
        assert!(resource_safety(&w.history, &name).is_some());
    }

    #[test]
    fn a_pause_longer_than_the_lease_yields_two_holders_and_a_lost_update() {
        // Pitfall 15: A pauses 5 s into its 40 s critical section, for 35 s. Its renewal
        // timer queues with it, the key expires at ~30 s, B takes the lock; A resumes, its
        // renewal is answered 0 and nothing tells it: it writes on a stale read.
        let mut w = world(config("a", 40), config("b", 1), 60);
        w.schedule(Fault::new(
            SimTime(5 * NS_PER_S),
            Some(40 * NS_PER_S - 5 * NS_PER_S),
            FaultKind::Pause(A),
        ));
        w.run();
        let b_acquired = at_of(&w, B, |o| matches!(o, Observation::Acquired { .. }));
        assert!(
            b_acquired[0] >= SimTime(30 * NS_PER_S) && b_acquired[0] < SimTime(32 * NS_PER_S),
            "{b_acquired:?}"
        );
        assert!(of(&w, A).iter().all(|r| !matches!(
            r.obs,
            Observation::Extended { .. } | Observation::Lost { .. }
        )));
        assert!(longest_overlap_ns(&w.history) > 0);
        assert!(resource_safety(&w.history, &name).is_some());
    }

    /// Drives one client by hand: each call hands it a context at `mono_ns`.
    struct Drive {
        prng: Prng,
        mono_ns: u64,
    }

    impl Drive {
        fn new() -> Drive {
            Drive {
                prng: Seed(1).stream("t", 0),
                mono_ns: 0,
            }
        }
        fn with(
            &mut self,
            c: &mut WatchdogClient,
            f: impl FnOnce(&mut WatchdogClient, &mut Cx<'_>),
        ) -> Vec<Output> {
            let mut out = Vec::new();
            let wall_ms = 1_700_000_000_000 + (self.mono_ns / NS_PER_MS) as i64;
            let mut cx = Cx::new(A, wall_ms, self.mono_ns, &mut self.prng, &mut out);
            f(c, &mut cx);
            out
        }
    }

    fn request_ids(out: &[Output]) -> Vec<(u64, Command)> {
        out.iter()
            .filter_map(|o| match o {
                Output::Send {
                    msg: Msg::Request { id, cmd },
                    ..
                } => Some((*id, cmd.clone())),
                _ => None,
            })
            .collect()
    }

    fn timers(out: &[Output]) -> Vec<(u64, u64)> {
        out.iter()
            .filter_map(|o| match o {
                Output::Timer { after_ns, tag } => Some((*after_ns, *tag)),
                _ => None,
            })
            .collect()
    }

    fn observations(out: &[Output]) -> Vec<Observation> {
        out.iter()
            .filter_map(|o| match o {
                Output::Observe(obs) => Some(obs.clone()),
                _ => None,
            })
            .collect()
    }

    fn resource_msg_id(out: &[Output]) -> Option<(u64, bool)> {
        out.iter().find_map(|o| match o {
            Output::Send {
                msg: Msg::ResourceRead { id, .. },
                ..
            } => Some((*id, false)),
            Output::Send {
                msg: Msg::ResourceWrite { id, .. },
                ..
            } => Some((*id, true)),
            _ => None,
        })
    }

    fn reply(id: u64, reply: Reply) -> Msg {
        Msg::Reply { id, reply }
    }

    /// Acquires and enters the critical section; returns (renew timer tag, hold timer tag).
    fn acquire(d: &mut Drive, c: &mut WatchdogClient) -> (u64, u64) {
        let out = d.with(c, |c, cx| c.on_start(cx));
        let (id, cmd) = request_ids(&out).remove(0);
        assert!(matches!(cmd, Command::Set { .. }));
        let out = d.with(c, |c, cx| c.on_message(cx, REDIS, reply(id, Reply::Ok)));
        assert!(matches!(
            observations(&out)[..],
            [Observation::Acquired { validity_ns: Some(v), .. }] if v == 30 * NS_PER_S
        ));
        let renew = timers(&out)
            .into_iter()
            .find(|(_, tag)| matches!(Timer::from_tag(*tag), Timer::Background(_)))
            .expect("renewal scheduled");
        assert_eq!(renew.0, 10 * NS_PER_S);
        let (read_id, _) = resource_msg_id(&out).expect("read sent");
        let ack = Msg::ResourceAck {
            id: read_id,
            accepted: true,
            version: 0,
        };
        let out = d.with(c, |c, cx| c.on_message(cx, RESOURCE, ack));
        let (_, hold) = timers(&out)[0];
        (renew.1, hold)
    }

    /// Fires the renewal timer at 10 s; returns the renewal request's id.
    fn renew(d: &mut Drive, c: &mut WatchdogClient, tag: u64) -> u64 {
        d.mono_ns = 10 * NS_PER_S;
        let out = d.with(c, |c, cx| c.on_timer(cx, tag));
        let (id, cmd) = request_ids(&out).remove(0);
        match cmd {
            Command::Eval {
                script: ScriptRef::Source(s),
                keys,
                args,
                ..
            } => {
                assert_eq!(&s.source[..], EXTEND_SRC.as_bytes());
                assert_eq!(keys[..], [Bytes::from("lock")]);
                assert_eq!(args[..], [Bytes::from("a-1"), Bytes::from("30000")]);
            }
            other => panic!("expected the extend script, got {other:?}"),
        }
        id
    }

    #[test]
    fn a_failed_renewal_is_not_reported_by_default_and_the_holder_writes() {
        let (mut d, mut c) = (Drive::new(), WatchdogClient::new(config("a", 40)));
        let (renew_tag, hold) = acquire(&mut d, &mut c);
        let id = renew(&mut d, &mut c, renew_tag);
        let out = d.with(&mut c, |c, cx| {
            c.on_message(cx, REDIS, reply(id, Reply::Int(0)))
        });
        // Nothing observed, and renewal stops (no next renewal timer): Redisson cancels it.
        assert!(out.is_empty(), "{out:?}");
        assert!(c.is_holding());
        d.mono_ns = 40 * NS_PER_S;
        let out = d.with(&mut c, |c, cx| c.on_timer(cx, hold));
        let (write_id, is_write) = resource_msg_id(&out).expect("the holder writes");
        assert!(is_write);
        let ack = Msg::ResourceAck {
            id: write_id,
            accepted: true,
            version: 1,
        };
        let out = d.with(&mut c, |c, cx| c.on_message(cx, RESOURCE, ack));
        assert!(matches!(
            observations(&out)[..],
            [Observation::Released { .. }]
        ));
    }

    #[test]
    fn a_failed_renewal_is_reported_with_the_option_and_ends_the_critical_section() {
        let cfg = WatchdogConfig {
            report_renewal_failure: true,
            ..config("a", 40)
        };
        let (mut d, mut c) = (Drive::new(), WatchdogClient::new(cfg));
        let (renew_tag, hold) = acquire(&mut d, &mut c);
        let id = renew(&mut d, &mut c, renew_tag);
        let out = d.with(&mut c, |c, cx| {
            c.on_message(cx, REDIS, reply(id, Reply::Int(0)))
        });
        assert_eq!(
            observations(&out),
            vec![Observation::Lost {
                lock: 0,
                token: Bytes::from("a-1"),
                reason: "renewal failed",
            }]
        );
        assert!(!c.is_holding());
        // The hold timer is stale now: no write.
        d.mono_ns = 40 * NS_PER_S;
        let out = d.with(&mut c, |c, cx| c.on_timer(cx, hold));
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn a_renewal_that_times_out_is_silent_and_renewal_goes_on() {
        let (mut d, mut c) = (Drive::new(), WatchdogClient::new(config("a", 40)));
        let (renew_tag, _) = acquire(&mut d, &mut c);
        // The timeout timer armed at the read fires at 3 s with nothing left to time out;
        // it is not re-armed.
        d.mono_ns = 3 * NS_PER_S;
        let out = d.with(&mut c, |c, cx| c.on_timer(cx, Timer::Request.tag()));
        assert!(out.is_empty(), "{out:?}");
        // The renewal at 10 s arms it again, for its 3 s deadline.
        d.mono_ns = 10 * NS_PER_S;
        let out = d.with(&mut c, |c, cx| c.on_timer(cx, renew_tag));
        assert_eq!(request_ids(&out).len(), 1);
        assert!(timers(&out).contains(&(3 * NS_PER_S, Timer::Request.tag())));
        d.mono_ns = 13 * NS_PER_S;
        let out = d.with(&mut c, |c, cx| c.on_timer(cx, Timer::Request.tag()));
        assert!(observations(&out).is_empty());
        let next = timers(&out);
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].0, 10 * NS_PER_S);
        assert!(
            matches!(Timer::from_tag(next[0].1), Timer::Background(_)) && next[0].1 != renew_tag
        );
        assert!(c.is_holding());
    }
}
