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

use std::sync::Arc;

use crate::client::section::{Section, SectionHost};
use crate::client::timeout::RequestTimeout;
use crate::client::timer::Timer;
use crate::history::Observation;
use crate::process::{Cx, Process};
use crate::proto::command::{ScriptRef, SetCond, SetExpiry};
use crate::proto::sentinel::{SentinelRequest, SentinelResponse};
use crate::proto::{Bytes, Command, Msg, Reply, Script};
use crate::redis::node::NOSCRIPT;
use crate::redis::scripts::UNLOCK_SRC;
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

/// A closed-open range `[min, max]` of ns from which a duration is drawn per use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NsRange {
    pub min: u64,
    // Invariant: min <= max.
    pub max: u64,
}

impl NsRange {
    pub fn fixed(ns: u64) -> NsRange {
        NsRange { min: ns, max: ns }
    }
    pub fn new(min: u64, max: u64) -> NsRange {
        assert!(min <= max);
        NsRange { min, max }
    }
    fn draw(self, cx: &mut Cx<'_>) -> u64 {
        cx.rng.range_inclusive(self.min, self.max)
    }
}

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
    /// Think or retry timer armed.
    Waiting,
    Done,
}

/// One lock client.
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
    /// EVALSHA failed with NOSCRIPT: send the full script from now on (until restart).
    use_eval: bool,
    /// The last token made, and the attempt it belongs to.
    token_buf: Bytes,
    token_buf_attempt: u64,
    /// Monotonic deadline of the request in flight, if any.
    deadline_mono_ns: Option<u64>,
    /// The node this client sends commands to (the master as last learnt).
    redis: ProcId,
    /// Ask a sentinel for the master before the next attempt.
    need_discovery: bool,
    /// Which sentinel to ask next (round robin).
    sentinel_next: usize,
    timeout: RequestTimeout,
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
            use_eval: false,
            deadline_mono_ns: None,
            timeout: RequestTimeout::default(),
            token_buf: Bytes::new(),
            token_buf_attempt: 0,
            redis,
            need_discovery,
            sentinel_next: 0,
        }
    }

    /// `prefix-attempt`, kept rendered in `token_buf` and incremented in place: tokens are
    /// made once per attempt, the hot path of a contended lock.
    fn next_token(&mut self) -> Bytes {
        let digits_start = self.config.token_prefix.len() + 1;
        if self.token_buf.len() < digits_start || self.token_buf_attempt + 1 != self.attempt {
            self.token_buf = token_bytes(&self.config.token_prefix, self.attempt);
        } else {
            // Decimal increment with carry; a carry out of the first digit adds one.
            let mut i = self.token_buf.len();
            loop {
                i -= 1;
                if self.token_buf[i] == b'9' {
                    self.token_buf.set(i, b'0');
                    if i == digits_start {
                        self.token_buf.insert(digits_start, b'1');
                        break;
                    }
                } else {
                    let d = self.token_buf[i];
                    self.token_buf.set(i, d + 1);
                    break;
                }
            }
        }
        self.token_buf_attempt = self.attempt;
        debug_assert_eq!(
            self.token_buf,
            token_bytes(&self.config.token_prefix, self.attempt)
        );
        self.token_buf.clone()
    }

    fn arm(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        self.clear_timeout();
        self.timer_gen += 1;
        Timer::Step(self.timer_gen).set(cx, after_ns);
    }

    fn request(&mut self, cx: &mut Cx<'_>, phase: Phase, cmd: Command) {
        let id = self.next_id;
        self.next_id += 1;
        self.pending_id = id;
        self.phase = phase;
        cx.send(self.redis, Msg::Request { id, cmd });
        self.arm_timeout(cx);
    }

    fn arm_timeout(&mut self, cx: &mut Cx<'_>) {
        self.deadline_mono_ns = Some(cx.mono_ns + self.config.request_timeout_ns);
        self.timeout.ensure(cx, self.config.request_timeout_ns);
    }

    /// Any state timer supersedes the wait for a reply.
    fn clear_timeout(&mut self) {
        self.deadline_mono_ns = None;
    }

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
        self.token = self.next_token();
        self.fence = None;
        if self.attempts_this_round == 1 {
            // One observation per acquisition round, not per retry: checkers need to know
            // since when the lock has been wanted; retries are in the trace.
            cx.observe(Observation::Attempt {
                lock: self.config.lock,
                token: self.token.clone(),
            });
        }
        let key = self.config.key.clone();
        let cmd = if self.config.algorithm.has_ttl() {
            Command::Set {
                key,
                value: self.token.clone(),
                cond: Some(SetCond::Nx),
                get: false,
                expiry: Some(SetExpiry::Px(self.config.ttl_ms as i64)),
            }
        } else {
            Command::SetNx(key, self.token.clone())
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
        if self
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
        let validity_ns = self
            .config
            .algorithm
            .has_ttl()
            .then(|| self.config.ttl_ms * NS_PER_MS);
        cx.observe(Observation::Acquired {
            lock: self.config.lock,
            token: self.token.clone(),
            fence: self.fence,
            validity_ns,
            believed_until: None,
        });
        self.enter_section(cx, self.fence);
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
        let script = if self.use_eval {
            ScriptRef::Source(self.unlock.clone())
        } else {
            ScriptRef::Sha(Some(self.unlock.sha))
        };
        let cmd = Command::Eval {
            script,
            keys: self.script_keys(),
            args: Arc::new([self.token.clone()]),
            read_only: false,
        };
        self.request(cx, phase, cmd);
    }

    fn on_reply(&mut self, cx: &mut Cx<'_>, reply: Reply) {
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
                Reply::Int(n) if n >= i64::from(self.config.wait_replicas) => self.acquired(cx),
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
                Reply::Int(n) if n > 0 => {
                    self.fence = Some(n as u64);
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

    /// The request in flight timed out or was refused, or a state timer fired: move on.
    fn request_failed(&mut self, cx: &mut Cx<'_>) {
        self.pending_id = 0;
        match self.phase {
            Phase::Idle | Phase::Done => {}
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
            Phase::ReleaseGet | Phase::Releasing => {
                self.suspect_master();
                self.think(cx);
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

    fn on_message(&mut self, cx: &mut Cx<'_>, _from: ProcId, msg: Msg) {
        match msg {
            Msg::Reply { id, reply } if id == self.pending_id => {
                self.clear_timeout();
                self.on_reply(cx, reply);
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
            Msg::Refused { id } if id == self.pending_id => {
                self.clear_timeout();
                self.request_failed(cx);
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        match Timer::from_tag(tag) {
            Timer::Request => {
                if !self.timeout.expired(cx, self.deadline_mono_ns) {
                    return;
                }
                self.deadline_mono_ns = None;
            }
            Timer::Step(g) if g == self.timer_gen => {}
            _ => return,
        }
        self.request_failed(cx);
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefix_dash_number() {
        assert_eq!(&token_bytes("c1", 0)[..], b"c1-0");
        assert_eq!(
            &token_bytes("c12", u64::MAX)[..],
            b"c12-18446744073709551615"
        );
    }
}

#[cfg(test)]
mod token_tests {
    use super::*;
    use crate::time::ProcId;

    #[test]
    fn incremented_tokens_match_freshly_rendered_ones() {
        let cfg = ClientConfig {
            algorithm: Algorithm::SetPxCad,
            lock: 0,
            key: Bytes::from("lock"),
            redis: ProcId(0),
            resource: None,
            ttl_ms: 10,
            hold: NsRange::fixed(1),
            think: NsRange::fixed(0),
            retry: NsRange::fixed(1),
            request_timeout_ns: 1,
            max_attempts: None,
            rounds: None,
            fence_key: Bytes::from("fence"),
            token_prefix: "c7".into(),
            sentinels: vec![],
            wait_replicas: 0,
            wait_timeout_ms: 0,
        };
        let mut c = LockClient::new(cfg);
        for n in 1..=10_500u64 {
            c.attempt = n;
            assert_eq!(c.next_token(), token_bytes("c7", n), "attempt {n}");
        }
    }
}
