//! Master-replica corpus cases, replayed in a real world: two Redis nodes and a driver
//! process that plays the recorder — it sends each command at its `@T` (or as soon as the
//! previous one was answered), links the replica with `REPLICAOF`, and implements
//! `wait-sync` as the recorder did: poll ROLE on both nodes until the replica is connected,
//! the master lists it, and both report the same offset.

use std::cell::RefCell;
use std::rc::Rc;

use crate::clock::NodeClock;
use crate::conformance::corpus::{
    CASE_START_UNIX_MS, Case, CaseResult, NodeRole, StepKind, render_argv, resolve_arg,
};
use crate::net::LinkSpec;
use crate::process::{Cx, Process};
use crate::proto::command::ParseError;
use crate::proto::{Bytes, Command, Msg, Reply};
use crate::redis::{RedisConfig, RedisProcess};
use crate::rng::{Ratio, Seed};
use crate::sim::{Actor, Limits, ProcSpec, TraceMode, World};
use crate::time::{NS_PER_MS, NS_PER_US, ProcId, SimTime};

const MASTER: ProcId = ProcId(0);
const REPLICA: ProcId = ProcId(1);
/// One-way delay of every link: the recorder ran on loopback.
const LINK_NS: u64 = 50 * NS_PER_US;
/// `wait-sync` polls this often and gives up after this long.
const POLL_NS: u64 = NS_PER_MS;
const WAIT_SYNC_LIMIT_NS: u64 = 5_000 * NS_PER_MS;

enum Action {
    Command {
        node: ProcId,
        cmd: Result<Command, ParseError>,
    },
    Link,
    WaitSync,
}

struct Step {
    at_ns: u64,
    action: Action,
}

#[derive(Default)]
struct Results {
    /// Reply per step index (None for directives).
    replies: Vec<Option<Reply>>,
    failure: Option<String>,
}

struct Driver {
    steps: Vec<Step>,
    next: usize,
    next_id: u64,
    waiting: Vec<u64>,
    /// Last ROLE replies during wait-sync: (master, replica).
    roles: (Option<Reply>, Option<Reply>),
    sync_started_ns: u64,
    out: Rc<RefCell<Results>>,
}

impl Driver {
    fn send(&mut self, cx: &mut Cx<'_>, to: ProcId, cmd: Command) {
        self.next_id += 1;
        self.waiting.push(self.next_id);
        cx.send(
            to,
            Msg::Request {
                id: self.next_id,
                cmd,
            },
        );
    }

    /// Schedules the next step at its @T, or now if the schedule has slipped.
    fn advance(&mut self, cx: &mut Cx<'_>) {
        self.next += 1;
        if let Some(step) = self.steps.get(self.next) {
            cx.set_timer(step.at_ns.saturating_sub(cx.mono_ns), 0);
        }
    }

    fn run_step(&mut self, cx: &mut Cx<'_>) {
        let Some(step) = self.steps.get(self.next) else {
            return;
        };
        match &step.action {
            Action::Command { node, cmd: Ok(c) } => {
                let (node, c) = (*node, c.clone());
                self.send(cx, node, c);
            }
            Action::Command { cmd: Err(e), .. } => {
                self.out.borrow_mut().replies[self.next] = Some(e.client_reply());
                self.advance(cx);
            }
            Action::Link => {
                let cmd = Command::ReplicaOf(Some((Bytes::from("master"), Bytes::from("6379"))));
                self.send(cx, REPLICA, cmd);
            }
            Action::WaitSync => {
                if self.roles == (None, None) && self.waiting.is_empty() {
                    self.sync_started_ns = cx.mono_ns;
                }
                self.roles = (None, None);
                self.send(cx, MASTER, Command::Role);
                self.send(cx, REPLICA, Command::Role);
            }
        }
    }

    fn synced(&self) -> bool {
        let (Some(Reply::Array(m)), Some(Reply::Array(r))) = (&self.roles.0, &self.roles.1) else {
            return false;
        };
        let master_off = match m.get(1) {
            Some(Reply::Int(o)) => *o,
            _ => return false,
        };
        let lists_replica = matches!(m.get(2), Some(Reply::Array(v)) if !v.is_empty());
        let replica_ok = matches!(r.get(3), Some(Reply::Bulk(s)) if s == b"connected")
            && matches!(r.get(4), Some(Reply::Int(o)) if *o == master_off);
        lists_replica && replica_ok
    }
}

impl Process for Driver {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        if let Some(step) = self.steps.first() {
            cx.set_timer(step.at_ns, 0);
        }
    }

    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        let Msg::Reply { id, reply } = msg else {
            return;
        };
        let Some(pos) = self.waiting.iter().position(|w| *w == id) else {
            return;
        };
        self.waiting.remove(pos);
        match self.steps.get(self.next).map(|s| &s.action) {
            Some(Action::Command { .. }) => {
                self.out.borrow_mut().replies[self.next] = Some(reply);
                self.advance(cx);
            }
            Some(Action::Link) => self.advance(cx),
            Some(Action::WaitSync) => {
                if from == MASTER {
                    self.roles.0 = Some(reply);
                } else {
                    self.roles.1 = Some(reply);
                }
                if !self.waiting.is_empty() {
                    return;
                }
                if self.synced() {
                    self.roles = (None, None);
                    self.advance(cx);
                } else if cx.mono_ns - self.sync_started_ns > WAIT_SYNC_LIMIT_NS {
                    self.out.borrow_mut().failure =
                        Some("wait-sync did not finish within 5s".into());
                } else {
                    cx.set_timer(POLL_NS, 0);
                }
            }
            None => {}
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_>, _tag: u64) {
        if self.waiting.is_empty() {
            self.run_step(cx);
        }
    }

    fn on_restart(&mut self, _keep_data: bool) {}
}

/// Replays one master-replica case.
pub fn run_case(case: &Case) -> CaseResult {
    let start = CASE_START_UNIX_MS;
    let mut steps = Vec::new();
    let mut argvs = Vec::new();
    for st in &case.steps {
        let at_ns = st.at_ms * NS_PER_MS;
        let (action, argv) = match &st.kind {
            StepKind::Command { node, argv, .. } => {
                let argv: Vec<Vec<u8>> = argv.iter().map(|a| resolve_arg(a, start)).collect();
                let node = if *node == Some(NodeRole::Replica) {
                    REPLICA
                } else {
                    MASTER
                };
                (
                    Action::Command {
                        node,
                        cmd: Command::parse(&argv),
                    },
                    argv,
                )
            }
            StepKind::Link => (Action::Link, vec![]),
            StepKind::WaitSync => (Action::WaitSync, vec![]),
        };
        steps.push(Step { at_ns, action });
        argvs.push(argv);
    }
    let out = Rc::new(RefCell::new(Results {
        replies: vec![None; steps.len()],
        failure: None,
    }));
    let node = |name: &str| {
        let config = RedisConfig {
            observe_keys: false,
            name: Bytes::from(name),
            peers: vec![
                (Bytes::from("master"), MASTER),
                (Bytes::from("replica"), REPLICA),
            ],
            ..RedisConfig::default()
        };
        ProcSpec {
            name: name.into(),
            actor: Actor::Redis(Box::new(RedisProcess::new(config))),
            clock: NodeClock::perfect(start),
            start_at: crate::time::SimTime::ZERO,
        }
    };
    let driver = Driver {
        steps,
        next: 0,
        next_id: 0,
        waiting: Vec::new(),
        roles: (None, None),
        sync_started_ns: 0,
        out: out.clone(),
    };
    let procs = vec![
        node("master"),
        node("replica"),
        ProcSpec {
            name: "driver".into(),
            actor: Actor::Custom(Box::new(driver)),
            clock: NodeClock::perfect(start),
            start_at: crate::time::SimTime::ZERO,
        },
    ];
    let last_ms = case.steps.last().map_or(0, |s| s.at_ms);
    let limits = Limits {
        max_time: SimTime::from_ms(last_ms + 10_000),
        max_events: 10_000_000,
    };
    let link = LinkSpec::new(LINK_NS, LINK_NS, Ratio::NEVER);
    let mut world = World::new(Seed(0), limits, link, procs, TraceMode::Off);
    world.run();
    let results = out.borrow();
    for (i, st) in case.steps.iter().enumerate() {
        let StepKind::Command { expect, .. } = &st.kind else {
            continue;
        };
        let command = render_argv(&argvs[i]);
        match &results.replies[i] {
            Some(got) if expect.matches(got, start) => {}
            Some(got) => {
                return CaseResult::Failed {
                    line: st.line,
                    command,
                    expected: expect.render(),
                    got: got.to_string(),
                };
            }
            None => {
                let why = results
                    .failure
                    .clone()
                    .unwrap_or_else(|| "no reply (the run ended first)".into());
                return CaseResult::Failed {
                    line: st.line,
                    command,
                    expected: expect.render(),
                    got: why,
                };
            }
        }
    }
    CaseResult::Passed
}
