//! A ZooKeeper-recipe lock, for contrast with the Redis locks: a linearizable lock service
//! and its client.
//!
//! The service stands for a whole ZooKeeper ensemble that never loses a write: one logical
//! process, no crash of its state modelled (a restart keeps everything, as a new leader
//! would). A client opens a session, creates an ephemeral sequential node under the lock and
//! holds the lock while its node is the lowest; otherwise it watches the lowest node and asks
//! again when it changes. The node dies with the session: a session that sends nothing for
//! its timeout expires, its nodes are deleted and the next node's owner takes the lock.
//!
//! What the contrast shows (a client paused after acquiring; a fencing counter that can go
//! back after a failover): a paused holder still
//! believes it holds after its session expired — a consensus store does not remove the need
//! for fencing — but its fencing token, the zxid of its node's creation, is trustworthy: every
//! write of the service gets a larger zxid, nothing is lost, so a later holder always presents
//! a larger token and the resource rejects the stale one.
//!
//! Simplified: the service is one process (no quorum, leader election or disconnected
//! clients reconnecting to a session); every waiter watches the lowest node rather than its
//! predecessor (the herd effect is harmless at the sizes modelled); a client whose request
//! failed abandons its session instead of resuming it, so a node it may have created stays
//! until that session expires (the orphan the real recipe finds again by a GUID in its name).

use std::collections::BTreeMap;

use crate::client::section::{Section, SectionHost};
use crate::client::timeout::RequestTimeout;
use crate::client::timer::NsRange;
use crate::client::timer::Timer;
use crate::history::Observation;
use crate::process::{Cx, Process};
use crate::proto::consensus::ConsensusMsg;
use crate::proto::{Bytes, Msg};
use crate::time::{NS_PER_MS, ProcId};

fn draw(range: NsRange, cx: &mut Cx<'_>) -> u64 {
    cx.rng.range_inclusive(range.min, range.max)
}

// ---------------------------------------------------------------------------------------------
// The service
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
pub struct ConsensusServiceConfig {
    /// ZooKeeper's `tickTime`: sessions are checked for expiry once per tick, and session
    /// timeouts are clamped into `[2, 20]` ticks.
    pub tick_ms: u64,
    /// Bound on open sessions; a `Connect` beyond it is refused.
    pub max_sessions: usize,
    /// Bound on nodes under one lock; a `CreateLockNode` beyond it is refused.
    pub max_nodes_per_lock: usize,
}

impl Default for ConsensusServiceConfig {
    /// zoo_sample.cfg's tickTime (2 s: session timeouts 4–40 s); ZooKeeper's code default
    /// is 3 s (`ZooKeeperServer.DEFAULT_TICK_TIME`).
    fn default() -> Self {
        ConsensusServiceConfig {
            tick_ms: 2_000,
            max_sessions: 1_024,
            max_nodes_per_lock: 1_024,
        }
    }
}

#[derive(Clone, Debug)]
struct Session {
    client: ProcId,
    timeout_ns: u64,
    /// Monotonic time of the last request of this session (any request is a heartbeat).
    last_heard_mono_ns: u64,
}

#[derive(Clone, Debug)]
struct Node {
    session: u64,
    /// zxid of the node's creation (ZooKeeper's czxid).
    czxid: u64,
}

#[derive(Clone, Debug, Default)]
struct LockNodes {
    /// Sequence number of the next node (ZooKeeper's per-parent counter).
    next_seq: u64,
    // Invariant: the first entry (lowest seq) is the holder; its session is live.
    nodes: BTreeMap<u64, Node>,
    // Invariant: at most one entry per session (bounded by `max_sessions`); watchers are
    // one-shot and fire when the lowest node changes.
    watchers: Vec<(u64, ProcId)>,
}

impl LockNodes {
    fn lowest(&self) -> Option<(u64, &Node)> {
        self.nodes.first_key_value().map(|(s, n)| (*s, n))
    }
    fn lowest_seq(&self) -> Option<u64> {
        self.nodes.first_key_value().map(|(s, _)| *s)
    }
}

/// The lock service: sessions, ephemeral sequential nodes per lock, one-shot watches.
#[derive(Clone, Debug)]
pub struct ConsensusService {
    pub config: ConsensusServiceConfig,
    // Invariant: strictly increases with every write (session creation, node creation,
    // node deletion); never reset, not even by a restart.
    zxid: u64,
    next_session: u64,
    sessions: BTreeMap<u64, Session>,
    locks: BTreeMap<u32, LockNodes>,
    // Invariant: at most one tick timer is pending, and one is whenever sessions exist.
    tick_armed: bool,
    /// Restarted: give every session a fresh timeout at start (as a new ZooKeeper leader
    /// does), since no heartbeat could arrive while the service was down.
    refresh_sessions: bool,
}

const TICK: u64 = 0;

impl ConsensusService {
    pub fn new(config: ConsensusServiceConfig) -> ConsensusService {
        assert!(config.tick_ms > 0);
        ConsensusService {
            config,
            zxid: 0,
            next_session: 1,
            sessions: BTreeMap::new(),
            locks: BTreeMap::new(),
            tick_armed: false,
            refresh_sessions: false,
        }
    }

    /// The zxid of the last write.
    pub fn zxid(&self) -> u64 {
        self.zxid
    }

    /// The holder of `lock`: (session, node seq, czxid).
    pub fn holder(&self, lock: u32) -> Option<(u64, u64, u64)> {
        let (seq, n) = self.locks.get(&lock)?.lowest()?;
        Some((n.session, seq, n.czxid))
    }

    /// Open sessions.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// Nodes under `lock`, lowest first: (seq, session).
    pub fn nodes(&self, lock: u32) -> Vec<(u64, u64)> {
        self.locks
            .get(&lock)
            .map(|l| l.nodes.iter().map(|(s, n)| (*s, n.session)).collect())
            .unwrap_or_default()
    }

    fn write(&mut self) -> u64 {
        self.zxid += 1;
        self.zxid
    }

    fn arm_tick(&mut self, cx: &mut Cx<'_>) {
        if !self.tick_armed && !self.sessions.is_empty() {
            self.tick_armed = true;
            cx.set_timer(self.config.tick_ms * NS_PER_MS, TICK);
        }
    }

    /// A request of `session` arrived: it counts as a heartbeat. False if the session is
    /// unknown (expired or never opened); the sender is then told so.
    fn touch(&mut self, cx: &mut Cx<'_>, from: ProcId, session: u64) -> bool {
        match self.sessions.get_mut(&session) {
            Some(s) => {
                s.last_heard_mono_ns = cx.mono_ns;
                true
            }
            None => {
                cx.send(
                    from,
                    Msg::Consensus(ConsensusMsg::SessionExpired { session }),
                );
                false
            }
        }
    }

    /// Fires the one-shot watches of `lock` if its lowest node is no longer `before`.
    fn notify_if_changed(&mut self, cx: &mut Cx<'_>, lock: u32, before: Option<u64>) {
        let Some(l) = self.locks.get_mut(&lock) else {
            return;
        };
        if l.lowest_seq() == before {
            return;
        }
        for (_, client) in l.watchers.drain(..) {
            cx.send(client, Msg::Consensus(ConsensusMsg::Changed { lock }));
        }
    }

    fn delete_node(&mut self, cx: &mut Cx<'_>, lock: u32, seq: u64) {
        let Some(l) = self.locks.get_mut(&lock) else {
            return;
        };
        let before = l.lowest_seq();
        if l.nodes.remove(&seq).is_some() {
            self.write();
            self.notify_if_changed(cx, lock, before);
        }
    }

    /// Expires `session`: deletes its ephemeral nodes (one write each), drops its watches,
    /// notifies watchers of changed holders and tells the client.
    fn expire(&mut self, cx: &mut Cx<'_>, session: u64) {
        let Some(s) = self.sessions.remove(&session) else {
            return;
        };
        let locks: Vec<u32> = self.locks.keys().copied().collect();
        for lock in locks {
            let l = self.locks.get_mut(&lock).expect("listed lock");
            l.watchers.retain(|(w, _)| *w != session);
            let owned: Vec<u64> = l
                .nodes
                .iter()
                .filter(|(_, n)| n.session == session)
                .map(|(seq, _)| *seq)
                .collect();
            for seq in owned {
                self.delete_node(cx, lock, seq);
            }
        }
        cx.send(
            s.client,
            Msg::Consensus(ConsensusMsg::SessionExpired { session }),
        );
    }

    fn on_tick(&mut self, cx: &mut Cx<'_>) {
        let now = cx.mono_ns;
        let expired: Vec<u64> = self
            .sessions
            .iter()
            .filter(|(_, s)| now.saturating_sub(s.last_heard_mono_ns) >= s.timeout_ns)
            .map(|(id, _)| *id)
            .collect();
        for session in expired {
            self.expire(cx, session);
        }
        self.arm_tick(cx);
    }

    fn on_request(&mut self, cx: &mut Cx<'_>, from: ProcId, m: ConsensusMsg) {
        let reply = |cx: &mut Cx<'_>, m: ConsensusMsg| cx.send(from, Msg::Consensus(m));
        match m {
            ConsensusMsg::Connect {
                id,
                session_timeout_ms,
            } => {
                if self.sessions.len() >= self.config.max_sessions {
                    reply(cx, ConsensusMsg::Refused { id });
                    return;
                }
                let tick = self.config.tick_ms;
                let timeout_ms = session_timeout_ms.clamp(2 * tick, 20 * tick);
                let session = self.next_session;
                self.next_session += 1;
                self.write();
                self.sessions.insert(
                    session,
                    Session {
                        client: from,
                        timeout_ns: timeout_ms * NS_PER_MS,
                        last_heard_mono_ns: cx.mono_ns,
                    },
                );
                reply(
                    cx,
                    ConsensusMsg::Connected {
                        id,
                        session,
                        timeout_ms,
                    },
                );
                self.arm_tick(cx);
            }
            ConsensusMsg::Heartbeat { session } => {
                self.touch(cx, from, session);
            }
            ConsensusMsg::CreateLockNode { id, session, lock } => {
                if !self.touch(cx, from, session) {
                    return;
                }
                let max = self.config.max_nodes_per_lock;
                let l = self.locks.entry(lock).or_default();
                if l.nodes.len() >= max {
                    reply(cx, ConsensusMsg::Refused { id });
                    return;
                }
                let before = l.lowest_seq();
                let seq = l.next_seq;
                l.next_seq += 1;
                let zxid = self.write();
                let l = self.locks.get_mut(&lock).expect("entry made above");
                l.nodes.insert(
                    seq,
                    Node {
                        session,
                        czxid: zxid,
                    },
                );
                self.notify_if_changed(cx, lock, before);
                reply(cx, ConsensusMsg::Created { id, seq, zxid });
            }
            ConsensusMsg::Watch {
                id,
                session,
                lock,
                seq,
            } => {
                if !self.touch(cx, from, session) {
                    return;
                }
                let mut lowest = None;
                if let Some(l) = self.locks.get_mut(&lock) {
                    lowest = l.lowest().map(|(s, n)| (s, n.czxid));
                    // Nothing to wait for if the asker holds the lock or the lock is free.
                    if lowest.is_some_and(|(s, _)| s != seq)
                        && !l.watchers.iter().any(|(w, _)| *w == session)
                    {
                        l.watchers.push((session, from));
                    }
                }
                reply(
                    cx,
                    ConsensusMsg::Holder {
                        id,
                        holder_seq: lowest.map(|(s, _)| s),
                        holder_zxid: lowest.map(|(_, z)| z),
                    },
                );
            }
            ConsensusMsg::DeleteNode {
                id,
                session,
                lock,
                seq,
            } => {
                if !self.touch(cx, from, session) {
                    return;
                }
                let owner = self
                    .locks
                    .get(&lock)
                    .and_then(|l| l.nodes.get(&seq))
                    .map(|n| n.session);
                if owner.is_some_and(|o| o != session) {
                    reply(cx, ConsensusMsg::Refused { id });
                    return;
                }
                self.delete_node(cx, lock, seq);
                reply(cx, ConsensusMsg::Deleted { id });
            }
            // Responses and notifications are the service's own output.
            ConsensusMsg::Connected { .. }
            | ConsensusMsg::Created { .. }
            | ConsensusMsg::Holder { .. }
            | ConsensusMsg::Changed { .. }
            | ConsensusMsg::Deleted { .. }
            | ConsensusMsg::Refused { .. }
            | ConsensusMsg::SessionExpired { .. } => {}
        }
    }
}

impl Process for ConsensusService {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        if self.refresh_sessions {
            self.refresh_sessions = false;
            for s in self.sessions.values_mut() {
                s.last_heard_mono_ns = cx.mono_ns;
            }
        }
        self.arm_tick(cx);
    }

    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        if let Msg::Consensus(m) = msg {
            self.on_request(cx, from, m);
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        if tag == TICK {
            self.tick_armed = false;
            self.on_tick(cx);
        }
    }

    /// An ensemble does not lose committed state: everything is kept (`keep_data` is
    /// ignored); only the voided tick timer is re-armed.
    fn on_restart(&mut self, _keep_data: bool) {
        self.tick_armed = false;
        self.refresh_sessions = true;
    }
}

// ---------------------------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
pub struct ConsensusClientConfig {
    /// Index of the lock in the model's lock table.
    pub lock: u32,
    pub service: ProcId,
    pub resource: Option<ProcId>,
    /// Requested session timeout (the service clamps it); heartbeats go every third of the
    /// negotiated one.
    pub session_timeout_ms: u64,
    /// Time spent in the critical section between reading and writing the resource.
    pub hold: NsRange,
    /// Time between a release and the next round.
    pub think: NsRange,
    /// Delay before reconnecting after a failed request.
    pub retry: NsRange,
    /// A request with no answer after this long counts as failed.
    pub request_timeout_ns: u64,
    /// Present the node's creation zxid to the resource as fencing token (else no token).
    pub present_token: bool,
    /// Stop after this many completed critical sections (None = run until the end).
    pub rounds: Option<u64>,
    /// Prefix of this client's node names (unique per client); `-n<seq>` follows.
    pub token_prefix: String,
}

impl ConsensusClientConfig {
    /// A 10 s session, tokens presented, 1 s critical section, 100 ms think and retry, 3 s
    /// request timeout.
    pub fn new(lock: u32, service: ProcId, token_prefix: &str) -> ConsensusClientConfig {
        ConsensusClientConfig {
            lock,
            service,
            resource: None,
            session_timeout_ms: 10_000,
            hold: NsRange::fixed(1_000 * NS_PER_MS),
            think: NsRange::fixed(100 * NS_PER_MS),
            retry: NsRange::fixed(100 * NS_PER_MS),
            request_timeout_ns: 3_000 * NS_PER_MS,
            present_token: true,
            rounds: None,
            token_prefix: token_prefix.into(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientPhase {
    Idle,
    /// Waiting for `Connected`.
    Connecting,
    /// Waiting for `Created`.
    Creating,
    /// Waiting for `Holder`.
    Watching,
    /// Waiting for `Changed` (a re-check timer is armed in case a notification is lost).
    Queued,
    /// In the critical section; `Section::stage` says where.
    Section,
    /// Waiting for `Deleted`.
    Releasing,
    /// Think or retry timer armed.
    Waiting,
    Done,
}

/// The client's node under the lock.
#[derive(Clone, Debug)]
struct OwnNode {
    seq: u64,
    zxid: u64,
    name: Bytes,
}

/// A client of the lock service running the ZooKeeper lock recipe.
#[derive(Clone, Debug)]
pub struct ConsensusClient {
    pub config: ConsensusClientConfig,
    phase: ClientPhase,
    // Invariant: a step timer whose generation differs from `timer_gen` is stale and ignored.
    timer_gen: u64,
    /// Id of the request the current phase waits for (0: none).
    pending_id: u64,
    next_id: u64,
    /// Monotonic deadline of that request.
    deadline_mono_ns: Option<u64>,
    timeout: RequestTimeout,
    /// The session this client uses (None: not connected).
    session: Option<u64>,
    /// Negotiated session timeout.
    session_timeout_ns: u64,
    // Invariant: a heartbeat timer (`Timer::Background`) of another generation belongs to
    // an abandoned session and is ignored; one live heartbeat timer per session.
    session_gen: u64,
    node: Option<OwnNode>,
    /// The client believes it holds the lock: from `Acquired` to `Released` or `Lost`.
    holding: bool,
    /// The current round has reported its `Attempt`.
    round_started: bool,
    section: Section,
}

impl ConsensusClient {
    pub fn new(config: ConsensusClientConfig) -> ConsensusClient {
        let mut section = Section::new(
            config.lock,
            config.resource,
            config.hold,
            config.think,
            config.rounds,
        );
        section.think_zero_at_once = false;
        ConsensusClient {
            config,
            phase: ClientPhase::Idle,
            timer_gen: 0,
            pending_id: 0,
            next_id: 1,
            deadline_mono_ns: None,
            timeout: RequestTimeout::default(),
            session: None,
            session_timeout_ns: 0,
            session_gen: 0,
            node: None,
            holding: false,
            round_started: false,
            section,
        }
    }

    /// Whether the client believes it holds the lock.
    pub fn is_holding(&self) -> bool {
        self.holding
    }

    /// The session in use, if connected.
    pub fn session(&self) -> Option<u64> {
        self.session
    }

    fn arm(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        self.pending_id = 0;
        self.deadline_mono_ns = None;
        self.timer_gen += 1;
        Timer::Step(self.timer_gen).set(cx, after_ns);
    }

    fn send_request(
        &mut self,
        cx: &mut Cx<'_>,
        phase: ClientPhase,
        to: ProcId,
        msg_of: impl FnOnce(u64) -> Msg,
    ) {
        let id = self.next_id;
        self.next_id += 1;
        self.pending_id = id;
        self.phase = phase;
        // A state timer armed before belongs to the phase this request ends.
        self.timer_gen += 1;
        cx.send(to, msg_of(id));
        self.deadline_mono_ns = Some(cx.mono_ns + self.config.request_timeout_ns);
        self.timeout.ensure(cx, self.config.request_timeout_ns);
    }

    fn service_request(
        &mut self,
        cx: &mut Cx<'_>,
        phase: ClientPhase,
        m: impl FnOnce(u64) -> ConsensusMsg,
    ) {
        let service = self.config.service;
        self.send_request(cx, phase, service, |id| Msg::Consensus(m(id)));
    }

    fn connect(&mut self, cx: &mut Cx<'_>) {
        let session_timeout_ms = self.config.session_timeout_ms;
        self.service_request(cx, ClientPhase::Connecting, |id| ConsensusMsg::Connect {
            id,
            session_timeout_ms,
        });
    }

    fn connected(&mut self, cx: &mut Cx<'_>, session: u64, timeout_ms: u64) {
        self.session = Some(session);
        self.session_timeout_ns = timeout_ms * NS_PER_MS;
        self.session_gen += 1;
        self.arm_heartbeat(cx);
        self.start_round(cx);
    }

    fn arm_heartbeat(&mut self, cx: &mut Cx<'_>) {
        Timer::Background(self.session_gen).set(cx, (self.session_timeout_ns / 3).max(1));
    }

    /// Forget the session: its heartbeats stop and the service will expire it.
    fn drop_session(&mut self) {
        self.session = None;
        self.session_gen += 1;
        self.node = None;
    }

    fn start_round(&mut self, cx: &mut Cx<'_>) {
        if self.section.finished() {
            // Done: stop heartbeating; the session (without nodes) expires on its own.
            self.drop_session();
            self.phase = ClientPhase::Done;
            return;
        }
        let Some(session) = self.session else {
            self.connect(cx);
            return;
        };
        if !self.round_started {
            // The node name is not known before the service numbers it: the attempt is
            // reported with the client's prefix.
            self.round_started = true;
            cx.observe(Observation::Attempt {
                lock: self.config.lock,
                token: Bytes::from(self.config.token_prefix.as_str()),
            });
        }
        let lock = self.config.lock;
        self.service_request(cx, ClientPhase::Creating, |id| {
            ConsensusMsg::CreateLockNode { id, session, lock }
        });
    }

    fn watch(&mut self, cx: &mut Cx<'_>) {
        let (Some(session), Some(node)) = (self.session, &self.node) else {
            // Unreachable (losing the session also ends the phases that watch); start over
            // rather than stall.
            debug_assert!(false, "watch without a session or a node");
            self.start_over(cx, "node vanished", false);
            return;
        };
        let (lock, seq) = (self.config.lock, node.seq);
        self.service_request(cx, ClientPhase::Watching, |id| ConsensusMsg::Watch {
            id,
            session,
            lock,
            seq,
        });
    }

    fn acquired(&mut self, cx: &mut Cx<'_>) {
        let Some(node) = &self.node else {
            // Unreachable (only a `Holder` naming our node leads here); start over rather
            // than stall.
            debug_assert!(false, "acquired without a node");
            self.start_over(cx, "node vanished", false);
            return;
        };
        let (name, zxid) = (node.name.clone(), node.zxid);
        self.round_started = false;
        self.holding = true;
        cx.observe(Observation::Acquired {
            lock: self.config.lock,
            token: name,
            fence: Some(zxid),
            validity_ns: None,
            believed_until: None,
        });
        // The node's zxid is the fencing token, if the client presents it; the node stays
        // the same until the section ends (dropping it ends the section).
        self.enter_section(cx, self.config.present_token.then_some(zxid));
    }

    /// The session is gone or a request failed: if it held the lock, the client learns it
    /// lost it now (it may have written meanwhile); it abandons the session and starts over.
    fn start_over(&mut self, cx: &mut Cx<'_>, reason: &'static str, reconnect_now: bool) {
        if self.holding {
            self.holding = false;
            if self.node.is_some() {
                self.report_lost(cx, reason);
            }
        }
        self.drop_session();
        if reconnect_now {
            self.connect(cx);
        } else {
            self.phase = ClientPhase::Waiting;
            let d = draw(self.config.retry, cx);
            self.arm(cx, d);
        }
    }

    fn on_service_msg(&mut self, cx: &mut Cx<'_>, m: ConsensusMsg) {
        use ClientPhase as P;
        use ConsensusMsg as C;
        match (self.phase, m) {
            // Only news about the session in use counts; late answers about abandoned
            // sessions (their queued heartbeats) say nothing new.
            (_, C::SessionExpired { session }) if self.session == Some(session) => {
                self.start_over(cx, "session expired", true);
            }
            (P::Queued, C::Changed { lock }) if lock == self.config.lock => self.watch(cx),
            (_, C::Changed { .. }) => {}
            (
                P::Connecting,
                C::Connected {
                    id,
                    session,
                    timeout_ms,
                },
            ) if id == self.pending_id => {
                self.clear_pending();
                self.connected(cx, session, timeout_ms);
            }
            (P::Creating, C::Created { id, seq, zxid }) if id == self.pending_id => {
                self.clear_pending();
                let name = node_name(&self.config.token_prefix, seq);
                self.node = Some(OwnNode { seq, zxid, name });
                self.watch(cx);
            }
            (P::Watching, C::Holder { id, holder_seq, .. }) if id == self.pending_id => {
                self.clear_pending();
                let mine = self.node.as_ref().map(|n| n.seq);
                match holder_seq {
                    Some(h) if Some(h) == mine => self.acquired(cx),
                    // Queued behind the holder; the watch is armed. Ask again after a
                    // session timeout anyway, should the notification be lost.
                    Some(_) => {
                        self.phase = P::Queued;
                        let d = self.session_timeout_ns;
                        self.arm(cx, d);
                    }
                    // Our node is gone though the session lives: start over.
                    None => self.start_over(cx, "node vanished", false),
                }
            }
            (P::Releasing, C::Deleted { id }) if id == self.pending_id => {
                self.clear_pending();
                self.node = None;
                self.think(cx);
            }
            (_, C::Refused { id }) if id == self.pending_id => {
                self.clear_pending();
                self.start_over(cx, "request failed", false);
            }
            _ => {}
        }
    }

    fn clear_pending(&mut self) {
        self.pending_id = 0;
        self.deadline_mono_ns = None;
    }

    fn on_timeout_timer(&mut self, cx: &mut Cx<'_>) {
        if !self.timeout.expired(cx, self.deadline_mono_ns) {
            return;
        }
        self.clear_pending();
        match self.phase {
            ClientPhase::Connecting
            | ClientPhase::Creating
            | ClientPhase::Watching
            | ClientPhase::Releasing => self.start_over(cx, "request failed", false),
            // An unanswered read gives the lock back unwritten, an unanswered write releases.
            ClientPhase::Section => self.on_resource_timeout(cx),
            ClientPhase::Idle | ClientPhase::Queued | ClientPhase::Waiting | ClientPhase::Done => {}
        }
    }
}

/// `prefix-n<seq>`: the client's node name, its token in the history.
pub fn node_name(prefix: &str, seq: u64) -> Bytes {
    Bytes::from(format!("{prefix}-n{seq}").as_str())
}

impl SectionHost for ConsensusClient {
    fn section(&mut self) -> &mut Section {
        &mut self.section
    }

    /// The node's name (empty only on the unreachable path `release_lock` guards).
    fn token(&self) -> Bytes {
        self.node
            .as_ref()
            .map_or_else(Bytes::new, |n| n.name.clone())
    }

    fn resource_request_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.pending_id = id;
        // A state timer armed before belongs to the phase this request ends.
        self.timer_gen += 1;
        id
    }

    fn await_resource(&mut self, cx: &mut Cx<'_>, _id: u64) {
        self.deadline_mono_ns = Some(cx.mono_ns + self.config.request_timeout_ns);
        self.timeout.ensure(cx, self.config.request_timeout_ns);
    }

    fn arm_step(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        self.arm(cx, after_ns);
    }

    fn enter_phase_section(&mut self) {
        self.phase = ClientPhase::Section;
    }

    fn enter_phase_waiting(&mut self) {
        self.phase = ClientPhase::Waiting;
    }

    fn release_lock(&mut self, cx: &mut Cx<'_>) {
        let (Some(session), Some(node)) = (self.session, self.node.clone()) else {
            // Unreachable (losing the session ends the critical section); start over rather
            // than stall.
            debug_assert!(false, "release without a session or a node");
            self.start_over(cx, "node vanished", false);
            return;
        };
        self.holding = false;
        let lock = self.config.lock;
        self.service_request(cx, ClientPhase::Releasing, |id| ConsensusMsg::DeleteNode {
            id,
            session,
            lock,
            seq: node.seq,
        });
    }

    fn next_attempt(&mut self, cx: &mut Cx<'_>) {
        self.start_round(cx);
    }
}

impl Process for ConsensusClient {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        self.connect(cx);
    }

    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        match msg {
            Msg::Consensus(m) => self.on_service_msg(cx, m),
            // The service was killed with its host up: its kernel refused our request (`id`),
            // or reset the connection a request of ours was in flight on (`id` 0). The same
            // failure as a timeout, learnt at once (a ZooKeeper client's ConnectionLoss).
            Msg::Refused { id }
                if from == self.config.service
                    && self.pending_id != 0
                    && (id == self.pending_id || id == 0)
                    && matches!(
                        self.phase,
                        ClientPhase::Connecting
                            | ClientPhase::Creating
                            | ClientPhase::Watching
                            | ClientPhase::Releasing
                    ) =>
            {
                self.clear_pending();
                self.start_over(cx, "connection refused", false);
            }
            Msg::ResourceAck { id, version, .. } if id != 0 && id == self.pending_id => {
                self.clear_pending();
                if self.phase == ClientPhase::Section {
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
                if g == self.session_gen
                    && let Some(session) = self.session
                {
                    cx.send(
                        self.config.service,
                        Msg::Consensus(ConsensusMsg::Heartbeat { session }),
                    );
                    self.arm_heartbeat(cx);
                }
            }
            Timer::Step(g) if g == self.timer_gen => match self.phase {
                ClientPhase::Section => self.on_hold_timer(cx),
                ClientPhase::Queued => self.watch(cx),
                ClientPhase::Waiting => self.start_round(cx),
                _ => {}
            },
            Timer::Step(_) => {}
        }
    }

    fn on_restart(&mut self, _keep_data: bool) {
        // A restarted client has lost its session handle; the service expires the old one.
        self.phase = ClientPhase::Idle;
        self.clear_pending();
        self.timeout.reset();
        self.holding = false;
        self.section.abandon();
        self.round_started = false;
        self.drop_session();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{fencing_monotonic, longest_overlap_ns, resource_safety};
    use crate::client::Resource;
    use crate::clock::NodeClock;
    use crate::history::Record;
    use crate::net::LinkSpec;
    use crate::process::Output;
    use crate::rng::{Prng, Ratio, Seed};
    use crate::sim::trace::TraceKind;
    use crate::sim::{Actor, Fault, FaultKind, Limits, ProcSpec, TraceMode, World};
    use crate::time::{NS_PER_S, SimTime};

    const SERVICE: ProcId = ProcId(0);
    const RESOURCE: ProcId = ProcId(1);
    const C1: ProcId = ProcId(2);
    const C2: ProcId = ProcId(3);

    fn config(prefix: &str, hold_s: u64) -> ConsensusClientConfig {
        ConsensusClientConfig {
            resource: Some(RESOURCE),
            session_timeout_ms: 6_000,
            hold: NsRange::fixed(hold_s * NS_PER_S),
            rounds: Some(1),
            ..ConsensusClientConfig::new(0, SERVICE, prefix)
        }
    }

    /// The service (2 s tick), the resource and two clients on 1 ms links; c1 starts first.
    fn world(c1: ConsensusClientConfig, c2: ConsensusClientConfig, fencing: bool) -> World {
        let clock = || NodeClock::new(1_700_000_000_000, 0, 0);
        let service = ConsensusService::new(ConsensusServiceConfig::default());
        let procs = vec![
            ProcSpec {
                name: "zk".into(),
                actor: Actor::Custom(Box::new(service)),
                clock: clock(),
                start_at: crate::time::SimTime::ZERO,
            },
            ProcSpec {
                name: "resource".into(),
                actor: Actor::Resource(Resource::new(fencing)),
                clock: clock(),
                start_at: crate::time::SimTime::ZERO,
            },
            ProcSpec {
                name: "c1".into(),
                actor: Actor::Custom(Box::new(ConsensusClient::new(c1))),
                clock: clock(),
                start_at: crate::time::SimTime::ZERO,
            },
            ProcSpec {
                name: "c2".into(),
                actor: Actor::Custom(Box::new(ConsensusClient::new(c2))),
                clock: clock(),
                start_at: crate::time::SimTime::ZERO,
            },
        ];
        let limits = Limits {
            max_time: SimTime(30 * NS_PER_S),
            max_events: 100_000,
        };
        let link = LinkSpec::new(NS_PER_MS, NS_PER_MS, Ratio::NEVER);
        World::new(Seed(1), limits, link, procs, TraceMode::Full)
    }

    fn records(w: &World, p: ProcId, pred: impl Fn(&Observation) -> bool) -> Vec<&Record> {
        w.history
            .records
            .iter()
            .filter(|r| r.proc == p && pred(&r.obs))
            .collect()
    }

    /// The first acquisition of `p`: when, its token and its fencing token.
    fn acquired(w: &World, p: ProcId) -> (SimTime, Bytes, u64) {
        let r = records(w, p, |o| matches!(o, Observation::Acquired { .. }));
        assert!(!r.is_empty());
        match &r[0].obs {
            Observation::Acquired {
                token,
                fence: Some(f),
                validity_ns: None,
                ..
            } => (r[0].at, token.clone(), *f),
            other => panic!("{other:?}"),
        }
    }

    fn name(p: ProcId) -> String {
        format!("p{}", p.0)
    }

    #[test]
    fn the_waiter_is_notified_and_acquires_when_the_holder_deletes_its_node() {
        let mut w = world(config("c1", 5), config("c2", 1), true);
        w.run();
        let (c1_at, c1_token, c1_fence) = acquired(&w, C1);
        let (c2_at, c2_token, c2_fence) = acquired(&w, C2);
        assert_eq!(
            (&c1_token[..], &c2_token[..]),
            (&b"c1-n0"[..], &b"c2-n1"[..])
        );
        let released = records(&w, C1, |o| matches!(o, Observation::Released { .. }));
        let released_at = released[0].at;
        assert!(c1_at < released_at && released_at < c2_at);
        // Delete → service, Changed → c2, Watch → service, Holder → c2: four 1 ms hops; the
        // watch woke it (its periodic re-check would come a session timeout later).
        assert_eq!(c2_at.saturating_sub(released_at), 4 * NS_PER_MS);
        assert!(w.trace.entries.iter().any(|e| e.proc == C2
            && matches!(
                &e.kind,
                TraceKind::Recv {
                    msg: Msg::Consensus(ConsensusMsg::Changed { lock: 0 }),
                    ..
                }
            )));
        assert!(c2_fence > c1_fence);
        assert_eq!(longest_overlap_ns(&w.history), 0);
        assert_eq!(resource_safety(&w.history, &name), None);
        assert!(records(&w, C1, |o| matches!(o, Observation::Lost { .. })).is_empty());
    }

    /// c1 pauses 1 s into its 5 s critical section, for 15 s: its heartbeats stop, the service
    /// expires its session (6 s timeout, checked every 2 s tick), deletes its node and c2
    /// acquires. c1 resumes, its queued hold timer fires first and it writes believing it
    /// holds; only then does it see `SessionExpired`.
    fn paused_holder(present_token: bool, fencing: bool) -> World {
        let c1 = ConsensusClientConfig {
            present_token,
            ..config("c1", 5)
        };
        let c2 = ConsensusClientConfig {
            present_token,
            ..config("c2", 10)
        };
        let mut w = world(c1, c2, fencing);
        w.schedule(Fault::new(
            SimTime(NS_PER_S),
            Some(16 * NS_PER_S - NS_PER_S),
            FaultKind::Pause(C1),
        ));
        w.run();
        w
    }

    #[test]
    fn a_session_without_heartbeats_expires_and_the_waiter_acquires_with_a_higher_zxid() {
        let w = paused_holder(true, true);
        let (_, _, c1_fence) = acquired(&w, C1);
        let (c2_at, _, c2_fence) = acquired(&w, C2);
        // c1's last request was at ~5 ms; the tick at ~8 s is the first to find it 6 s quiet.
        assert!(
            c2_at > SimTime(6 * NS_PER_S) && c2_at < SimTime(8 * NS_PER_S + 10 * NS_PER_MS),
            "{c2_at}"
        );
        assert!(c2_fence > c1_fence);
        // c1 learnt it only after resuming, and after its stale write went out.
        let lost = records(&w, C1, |o| {
            matches!(
                o,
                Observation::Lost {
                    reason: "session expired",
                    ..
                }
            )
        });
        assert_eq!(lost.len(), 1);
        assert!(lost[0].at >= SimTime(16 * NS_PER_S));
        let writes: Vec<&Record> = w
            .history
            .records
            .iter()
            .filter(|r| matches!(r.obs, Observation::ResourceWrite { .. }))
            .collect();
        assert!(matches!(
            writes[0].obs,
            Observation::ResourceWrite { client: C1, token: Some(t), accepted: false, .. }
                if t == c1_fence
        ));
        assert!(matches!(
            writes[1].obs,
            Observation::ResourceWrite {
                client: C2,
                accepted: true,
                ..
            }
        ));
        // Two clients believed they held the lock (fencing does not prevent that)...
        assert!(longest_overlap_ns(&w.history) > 0);
        // ...but the trustworthy token kept the resource safe.
        assert_eq!(resource_safety(&w.history, &name), None);
        assert_eq!(fencing_monotonic(&w.history, &name), None);
        // c1 starts over with a new session and a new node, behind c2: a higher zxid still.
        let again = records(&w, C1, |o| matches!(o, Observation::Acquired { .. }));
        assert!(matches!(
            again[1].obs,
            Observation::Acquired { fence: Some(f), .. } if f > c2_fence
        ));
    }

    #[test]
    fn without_tokens_the_paused_holder_s_write_is_a_lost_update() {
        let w = paused_holder(false, false);
        assert!(longest_overlap_ns(&w.history) > 0);
        assert!(resource_safety(&w.history, &name).is_some());
    }

    /// Drives the service by hand.
    struct Drive {
        prng: Prng,
        mono_ns: u64,
    }

    impl Drive {
        fn call(
            &mut self,
            s: &mut ConsensusService,
            f: impl FnOnce(&mut ConsensusService, &mut Cx<'_>),
        ) -> Vec<(ProcId, ConsensusMsg)> {
            let mut out = Vec::new();
            let mut cx = Cx::new(SERVICE, 0, self.mono_ns, &mut self.prng, &mut out);
            f(s, &mut cx);
            out.into_iter()
                .filter_map(|o| match o {
                    Output::Send {
                        to,
                        msg: Msg::Consensus(m),
                    } => Some((to, m)),
                    _ => None,
                })
                .collect()
        }
        fn send(
            &mut self,
            s: &mut ConsensusService,
            from: ProcId,
            m: ConsensusMsg,
        ) -> Vec<(ProcId, ConsensusMsg)> {
            self.call(s, |s, cx| s.on_message(cx, from, Msg::Consensus(m)))
        }
    }

    #[test]
    fn zxids_strictly_increase_over_every_write() {
        use ConsensusMsg as C;
        let mut d = Drive {
            prng: Seed(1).stream("t", 0),
            mono_ns: 0,
        };
        let mut s = ConsensusService::new(ConsensusServiceConfig::default());
        let mut zxids = vec![s.zxid()];
        let mut wrote = |s: &ConsensusService| zxids.push(s.zxid());

        let connect = |id| C::Connect {
            id,
            session_timeout_ms: 6_000,
        };
        let r = d.send(&mut s, C1, connect(1));
        assert_eq!(
            r,
            vec![(
                C1,
                C::Connected {
                    id: 1,
                    session: 1,
                    timeout_ms: 6_000
                }
            )]
        );
        wrote(&s);
        d.send(&mut s, C2, connect(1));
        wrote(&s);
        let r = d.send(
            &mut s,
            C1,
            C::CreateLockNode {
                id: 2,
                session: 1,
                lock: 0,
            },
        );
        assert_eq!(
            r,
            vec![(
                C1,
                C::Created {
                    id: 2,
                    seq: 0,
                    zxid: s.zxid()
                }
            )]
        );
        wrote(&s);
        let r = d.send(
            &mut s,
            C2,
            C::CreateLockNode {
                id: 2,
                session: 2,
                lock: 0,
            },
        );
        assert_eq!(
            r,
            vec![(
                C2,
                C::Created {
                    id: 2,
                    seq: 1,
                    zxid: s.zxid()
                }
            )]
        );
        wrote(&s);
        // A watch is answered at once, and registered: c2 is not the holder.
        let r = d.send(
            &mut s,
            C2,
            C::Watch {
                id: 3,
                session: 2,
                lock: 0,
                seq: 1,
            },
        );
        assert_eq!(
            r,
            vec![(
                C2,
                C::Holder {
                    id: 3,
                    holder_seq: Some(0),
                    holder_zxid: Some(3)
                }
            )]
        );
        // c1 releases: a write, and c2's watch fires (once).
        let r = d.send(
            &mut s,
            C1,
            C::DeleteNode {
                id: 3,
                session: 1,
                lock: 0,
                seq: 0,
            },
        );
        assert_eq!(
            r,
            vec![(C2, C::Changed { lock: 0 }), (C1, C::Deleted { id: 3 })]
        );
        wrote(&s);
        assert_eq!(s.holder(0), Some((2, 1, 4)));
        // c1 queues again behind c2, then goes quiet; c2 keeps heartbeating.
        d.send(
            &mut s,
            C1,
            C::CreateLockNode {
                id: 4,
                session: 1,
                lock: 0,
            },
        );
        wrote(&s);
        let mut expired_at = None;
        for tick in 1..=5u64 {
            d.mono_ns = tick * 2 * NS_PER_S;
            d.send(&mut s, C2, C::Heartbeat { session: 2 });
            let r = d.call(&mut s, |s, cx| s.on_timer(cx, TICK));
            if !r.is_empty() {
                assert_eq!(r, vec![(C1, C::SessionExpired { session: 1 })]);
                expired_at = Some(tick * 2);
                break;
            }
        }
        // Last heard at 0, timeout 6 s: the tick at 6 s expires it and deletes its node.
        assert_eq!(expired_at, Some(6));
        wrote(&s);
        assert_eq!(s.nodes(0), vec![(1, 2)]);
        assert_eq!(s.session_count(), 1);
        // The expired session's requests are answered with SessionExpired.
        let r = d.send(&mut s, C1, C::Heartbeat { session: 1 });
        assert_eq!(r, vec![(C1, C::SessionExpired { session: 1 })]);
        assert!(zxids.windows(2).all(|p| p[0] < p[1]), "{zxids:?}");
        assert_eq!(zxids.len(), 8);
    }
}
