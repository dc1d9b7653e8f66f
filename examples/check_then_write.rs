//! A lock algorithm of your own, through the whole `distlock-sim` command line.
//!
//! `CheckThenWrite` takes the lock with `SET key token NX PX ttl`, holds, then asks Redis
//! whether it still holds it (`GET key == token`) and lets the section write only if so;
//! it unlocks with the compare-and-delete script. Every Redis request has a deadline
//! (`request_timeout` of the model): a reply that does not come in time is given up on —
//! an acquire that timed out may have taken the key, so it is settled with the unlock script
//! before the next try; a check that timed out counts as a lost lock.
//!
//! Registered by name, it is a model's `algorithm: "check-then-write"` and gets every
//! command:
//!
//!     cargo run --release --example check_then_write -- sweep examples/check-then-write.ron --seeds 0..200
//!     cargo run --release --example check_then_write -- replay examples/check-then-write.ron --seed N --format html --out run.html
//!     cargo run --release --example check_then_write -- minimize examples/check-then-write.ron --seed N
//!
//! docs/custom-algorithm.md explains the parts.

use std::process::ExitCode;

use distlock_sim::cli::Registry;
use distlock_sim::client::ClientConfig;
use distlock_sim::client::section::{Section, SectionHost};
use distlock_sim::history::Observation;
use distlock_sim::process::{Cx, Process};
use distlock_sim::proto::command::{ScriptRef, SetCond, SetExpiry};
use distlock_sim::proto::scripts::UNLOCK_SRC;
use distlock_sim::proto::{Bytes, Command, Msg, Reply, Script};
use distlock_sim::time::ProcId;

fn main() -> ExitCode {
    distlock_sim::cli::main_with(
        Registry::new().algorithm_with_options("check-then-write", |cfg, options: &Options| {
            Box::new(CheckThenWrite::new(cfg, options))
        }),
    )
}

/// The algorithm's own fields, a client group's `options: (check: false)`: read when the
/// model is read (an unknown field is bad input, exit 2).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    /// Ask Redis whether the lock is still ours before writing (default true); `false` is
    /// the plain hold-then-write this algorithm improves on.
    #[serde(default = "yes")]
    check: bool,
}

fn yes() -> bool {
    true
}

impl Default for Options {
    fn default() -> Self {
        Options { check: true }
    }
}

/// Timer tags: the section's step timer is 0; a request deadline is this bit with the
/// request's id, so a deadline of an answered request is recognised as stale.
const DEADLINE_BIT: u64 = 1 << 62;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Step {
    Acquiring,
    Section,
    Checking,
    /// Releasing; `then_retry`: this unlock settles a timed-out acquire, and the next
    /// attempt follows it instead of the think time.
    Releasing {
        then_retry: bool,
    },
    Waiting,
}

struct CheckThenWrite {
    cfg: ClientConfig,
    /// `Options::check`.
    check: bool,
    section: Section,
    step: Step,
    attempt: u64,
    token: Bytes,
    next_id: u64,
    /// The Redis request whose reply is awaited, if any.
    // Invariant: Some(id) iff a deadline timer DEADLINE_BIT | id is pending and unanswered.
    awaiting: Option<u64>,
}

impl CheckThenWrite {
    fn new(cfg: &ClientConfig, options: &Options) -> Self {
        let section = Section::new(cfg.lock, cfg.resource, cfg.hold, cfg.think, cfg.rounds);
        CheckThenWrite {
            cfg: cfg.clone(),
            check: options.check,
            section,
            step: Step::Waiting,
            attempt: 0,
            token: Bytes::new(),
            next_id: 0,
            awaiting: None,
        }
    }

    /// Sends `cmd` to Redis with a deadline of the model's `request_timeout`.
    fn send_to_redis(&mut self, cx: &mut Cx<'_>, step: Step, cmd: Command) {
        self.step = step;
        let id = self.resource_request_id();
        self.awaiting = Some(id);
        cx.send(self.cfg.redis, Msg::Request { id, cmd });
        cx.set_timer(self.cfg.request_timeout_ns, DEADLINE_BIT | id);
    }

    fn try_lock(&mut self, cx: &mut Cx<'_>) {
        if self
            .cfg
            .max_attempts
            .is_some_and(|m| self.attempt >= u64::from(m))
        {
            self.step = Step::Waiting;
            return;
        }
        self.attempt += 1;
        self.token = Bytes::from(format!("{}-{}", self.cfg.token_prefix, self.attempt).as_str());
        cx.observe(Observation::Attempt {
            lock: self.cfg.lock,
            token: self.token.clone(),
        });
        let cmd = Command::Set {
            key: self.cfg.key.clone(),
            value: self.token.clone(),
            cond: Some(SetCond::Nx),
            get: false,
            expiry: Some(SetExpiry::Px(self.cfg.ttl_ms as i64)),
        };
        self.send_to_redis(cx, Step::Acquiring, cmd);
    }

    fn retry_later(&mut self, cx: &mut Cx<'_>) {
        self.step = Step::Waiting;
        let d = cx
            .rng
            .range_inclusive(self.cfg.retry.min, self.cfg.retry.max);
        cx.set_timer(d, 0);
    }

    fn unlock(&mut self, cx: &mut Cx<'_>, then_retry: bool) {
        let cmd = Command::Eval {
            script: ScriptRef::Source(Script::new(UNLOCK_SRC.as_bytes())),
            keys: [self.cfg.key.clone()].into(),
            args: [self.token.clone()].into(),
            read_only: false,
        };
        self.send_to_redis(cx, Step::Releasing { then_retry }, cmd);
    }

    /// What a reply (`Some`) or a passed deadline (`None`) to the awaited request means.
    fn on_redis(&mut self, cx: &mut Cx<'_>, reply: Option<Reply>) {
        self.awaiting = None;
        match (self.step, reply) {
            (Step::Acquiring, Some(Reply::Ok)) => {
                cx.observe(Observation::Acquired {
                    lock: self.cfg.lock,
                    token: self.token.clone(),
                    fence: None,
                    validity_ns: Some(self.cfg.ttl_ms * 1_000_000),
                    believed_until: None,
                });
                self.enter_section(cx, None);
            }
            // The SET may have been applied and only its reply lost: remove our key, if it
            // is there, before trying again.
            (Step::Acquiring, None) => self.unlock(cx, true),
            (Step::Acquiring, Some(_)) => self.retry_later(cx),
            (Step::Checking, Some(Reply::Bulk(v))) if v[..] == self.token[..] => {
                // Still ours: the section writes, then releases.
                self.step = Step::Section;
                self.end_section(cx);
            }
            (Step::Checking, r) => {
                let why = if r.is_none() {
                    "check timed out"
                } else {
                    "check failed"
                };
                self.report_lost(cx, why);
                self.think(cx);
            }
            (Step::Releasing { then_retry: true }, _) => self.retry_later(cx),
            (Step::Releasing { then_retry: false }, _) => self.think(cx),
            _ => {}
        }
    }
}

// The hooks the shared critical section runs on.
impl SectionHost for CheckThenWrite {
    fn section(&mut self) -> &mut Section {
        &mut self.section
    }
    fn token(&self) -> Bytes {
        self.token.clone()
    }
    fn resource_request_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
    fn await_resource(&mut self, _cx: &mut Cx<'_>, _id: u64) {}
    fn arm_step(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        cx.set_timer(after_ns, 0)
    }
    fn enter_phase_section(&mut self) {
        self.step = Step::Section
    }
    fn enter_phase_waiting(&mut self) {
        self.step = Step::Waiting
    }
    fn release_lock(&mut self, cx: &mut Cx<'_>) {
        self.unlock(cx, false)
    }
    fn next_attempt(&mut self, cx: &mut Cx<'_>) {
        self.try_lock(cx)
    }
}

impl Process for CheckThenWrite {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        self.try_lock(cx);
    }
    fn on_message(&mut self, cx: &mut Cx<'_>, _from: ProcId, msg: Msg) {
        match msg {
            // Only the awaited request's reply counts: a late one was given up on.
            Msg::Reply { id, reply } if self.awaiting == Some(id) => self.on_redis(cx, Some(reply)),
            Msg::ResourceAck { version, .. } if self.step == Step::Section => {
                self.on_resource_ack(cx, version)
            }
            _ => {}
        }
    }
    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        if tag & DEADLINE_BIT != 0 {
            if self.awaiting == Some(tag & !DEADLINE_BIT) {
                self.on_redis(cx, None);
            }
            return;
        }
        match self.step {
            // The hold is over (in place of `on_hold_timer`): check before acting.
            Step::Section if self.check => {
                let cmd = Command::Get(self.cfg.key.clone());
                self.send_to_redis(cx, Step::Checking, cmd);
            }
            Step::Section => self.end_section(cx),
            Step::Waiting => self.try_lock(cx),
            _ => {}
        }
    }
    fn on_restart(&mut self, _keep_data: bool) {
        self.step = Step::Waiting;
        self.awaiting = None;
        self.section.abandon();
    }
}
