//! Master-replica corpus cases, replayed in a real world: two Redis nodes and a driver
//! process that plays the recorder — it sends each command at its `@T` (or as soon as the
//! previous one was answered), links the replica with `REPLICAOF`, and implements
//! `wait-sync` as the recorder did: poll ROLE on both nodes until the replica is connected,
//! the master lists it, and both report the same offset. A named connection (`[b]`) is a
//! proxy process of its own in front of its node, so the node sees a client of its own; a
//! command that blocks is sent without waiting, and its `<-` line checks what came back.

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
const DRIVER: ProcId = ProcId(2);
/// One-way delay of every link: the recorder ran on loopback.
const LINK_NS: u64 = 50 * NS_PER_US;
/// `wait-sync` polls this often and gives up after this long.
const POLL_NS: u64 = NS_PER_MS;
const WAIT_SYNC_LIMIT_NS: u64 = 5_000 * NS_PER_MS;
/// How long a `<-` line waits past its @T for a reply still on the wire (a proxy's two
/// hops; the recorder reads with the same grace).
const AWAIT_GRACE_NS: u64 = NS_PER_MS;
/// Timer tags of the driver.
const TIMER_STEP: u64 = 0;
const TIMER_AWAIT: u64 = 1;

enum Action {
    Command {
        /// The node, or the proxy of the connection that sends it.
        to: ProcId,
        cmd: Result<Command, ParseError>,
        /// `-> (blocked)`: sent without waiting for its reply.
        blocks: bool,
    },
    /// `<-`: the reply of the command blocked on connection `to`.
    Await {
        to: ProcId,
    },
    Link,
    WaitSync,
}

/// A named connection: a client process of its own between the driver and its node.
#[derive(Clone)]
struct ConnProxy {
    node: ProcId,
    driver: ProcId,
}

impl Process for ConnProxy {
    fn on_start(&mut self, _cx: &mut Cx<'_>) {}
    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        match msg {
            Msg::Request { .. } if from == self.driver => cx.send(self.node, msg),
            Msg::Reply { .. } if from == self.node => cx.send(self.driver, msg),
            _ => {}
        }
    }
    fn on_timer(&mut self, _cx: &mut Cx<'_>, _tag: u64) {}
    fn on_restart(&mut self, _keep_data: bool) {}
}

struct Step {
    at_ns: u64,
    action: Action,
}

#[derive(Default)]
struct Results {
    /// Reply per step index (None for directives, blocked commands and a `<-` that got
    /// nothing).
    replies: Vec<Option<Reply>>,
    failure: Option<String>,
}

/// A blocked command: where its reply goes, and what came.
struct Parked {
    id: u64,
    to: ProcId,
    /// The reply, with how many steps had been sent when it came.
    came: Option<(Reply, usize)>,
}

struct Driver {
    steps: Vec<Step>,
    next: usize,
    /// One past the last step sent (a command, or a directive run); `<-` lines send nothing.
    sent: usize,
    next_id: u64,
    waiting: Vec<u64>,
    parked: Vec<Parked>,
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
            cx.set_timer(step.at_ns.saturating_sub(cx.mono_ns), TIMER_STEP);
        }
    }

    fn run_step(&mut self, cx: &mut Cx<'_>) {
        let Some(step) = self.steps.get(self.next) else {
            return;
        };
        if !matches!(step.action, Action::Await { .. }) {
            self.sent = self.next + 1;
        }
        match &step.action {
            Action::Command {
                to,
                cmd: Ok(c),
                blocks,
            } => {
                let (to, c, blocks) = (*to, c.clone(), *blocks);
                self.send(cx, to, c);
                if blocks {
                    let id = self.waiting.pop().expect("just sent");
                    self.parked.push(Parked { id, to, came: None });
                    self.advance(cx);
                }
            }
            Action::Command { cmd: Err(e), .. } => {
                self.out.borrow_mut().replies[self.next] = Some(e.client_reply());
                self.advance(cx);
            }
            Action::Await { to } => {
                let to = *to;
                if !self.take_awaited(to) {
                    cx.set_timer(AWAIT_GRACE_NS, TIMER_AWAIT);
                    return;
                }
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

    /// The `<-` step at `next` on connection `to`: its reply if it came after the last step
    /// sent before it (else a failure). `false`: nothing came yet.
    fn take_awaited(&mut self, to: ProcId) -> bool {
        let Some(i) = self.parked.iter().position(|p| p.to == to) else {
            return true;
        };
        let Some((reply, sent)) = self.parked[i].came.clone() else {
            return false;
        };
        self.parked.remove(i);
        let mut out = self.out.borrow_mut();
        if sent < self.sent {
            // Left without a reply: the failure says what came, and when.
            out.failure = Some(format!(
                "{reply}, which came before step {} was sent (by this '<-' line only)",
                sent + 1
            ));
        } else {
            out.replies[self.next] = Some(reply);
        }
        true
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
        if let Some(p) = self.parked.iter_mut().find(|p| p.id == id) {
            p.came = Some((reply, self.sent));
            return;
        }
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
            Some(Action::Await { .. }) => {}
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

    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        if tag == TIMER_AWAIT {
            // The grace is over: what came is taken, nothing is a failure of that line.
            let Some(Step {
                action: Action::Await { to },
                ..
            }) = self.steps.get(self.next)
            else {
                return;
            };
            let to = *to;
            self.take_awaited(to);
            self.advance(cx);
        } else if self.waiting.is_empty() {
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
    // Named connections, each a proxy after the driver: (node, name).
    let mut proxies: Vec<(ProcId, String)> = Vec::new();
    let mut route = |node: &Option<NodeRole>, conn: &Option<String>| {
        let node = if *node == Some(NodeRole::Replica) {
            REPLICA
        } else {
            MASTER
        };
        let Some(name) = conn else { return node };
        let i = match proxies.iter().position(|(n, c)| *n == node && c == name) {
            Some(i) => i,
            None => {
                proxies.push((node, name.clone()));
                proxies.len() - 1
            }
        };
        ProcId(DRIVER.0 + 1 + i as u32)
    };
    for st in &case.steps {
        let at_ns = st.at_ms * NS_PER_MS;
        let (action, argv) = match &st.kind {
            StepKind::Command {
                node, conn, argv, ..
            }
            | StepKind::Blocked { node, conn, argv } => {
                let argv: Vec<Vec<u8>> = argv.iter().map(|a| resolve_arg(a, start)).collect();
                let action = Action::Command {
                    to: route(node, conn),
                    cmd: Command::parse(&argv),
                    blocks: matches!(st.kind, StepKind::Blocked { .. }),
                };
                (action, argv)
            }
            StepKind::Await { node, conn, .. } => {
                let name = format!("[{}]", conn.as_deref().unwrap_or(""));
                (
                    Action::Await {
                        to: route(node, conn),
                    },
                    vec![name.into_bytes(), b"<-".to_vec()],
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
        sent: 0,
        next_id: 0,
        waiting: Vec::new(),
        parked: Vec::new(),
        roles: (None, None),
        sync_started_ns: 0,
        out: out.clone(),
    };
    let mut procs = vec![
        node("master"),
        node("replica"),
        ProcSpec {
            name: "driver".into(),
            actor: Actor::Custom(Box::new(driver)),
            clock: NodeClock::perfect(start),
            start_at: crate::time::SimTime::ZERO,
        },
    ];
    for (node, name) in proxies {
        procs.push(ProcSpec {
            name: format!("conn-{name}"),
            actor: Actor::Custom(Box::new(ConnProxy {
                node,
                driver: DRIVER,
            })),
            clock: NodeClock::perfect(start),
            start_at: crate::time::SimTime::ZERO,
        });
    }
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
        let (StepKind::Command { expect, .. } | StepKind::Await { expect, .. }) = &st.kind else {
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
