//! Sentinel: failure detection and failover of one monitored master, as Redis 7.0's Sentinel
//! does it, as a sans-IO process.
//!
//! One `Sentinel` watches one group of Redis nodes (a master and its replicas) together with
//! the other sentinels of the group. What it does, in Redis's own terms:
//!
//! - **The timer.** Everything runs on one tick at a random 10–19 Hz, redrawn after every
//!   tick (`sentinelTimer`, sentinel.c 7.0.15:5356-5370: `server.hz = CONFIG_DEFAULT_HZ +
//!   rand() % CONFIG_DEFAULT_HZ`), which also keeps sentinels started together out of
//!   lockstep; the first tick comes a random part of 100 ms after the start.
//! - **Monitoring.** A closed link is reopened on a tick at most once a ping period, with a
//!   PING at once; an open one gets PING once its last reply is `min(down_after, 1 s)` old
//!   (and the last PING half that), ROLE (standing for INFO) every 10 s — every second to
//!   replicas of a master that is ODOWN or failing over — and nothing with 100 commands
//!   unanswered. A node is *subjectively down* (SDOWN) when the oldest PING it has not
//!   answered validly (any non-error reply, or `-LOADING` / `-MASTERDOWN` as in Redis) is
//!   older than `down_after_ns` (`act_ping_time`): a silent node is down D after the first
//!   ping it ignored; one whose host refused the connection (`Msg::Refused`: a killed
//!   process) D after the reconnect's ping on the next tick. A link whose PING has waited
//!   half of D is closed and reopened (Redis's low-activity rule). The configured master is
//!   also SDOWN when it has reported itself a replica for longer than `down_after_ns` + 20 s
//!   (Redis: two INFO periods). ROLE replies give each node's role, whom a replica follows,
//!   and its replication offset.
//! - **Agreement.** While the master is SDOWN it asks every other sentinel
//!   `IsMasterDown` once its last answer is a period old (never two requests outstanding to
//!   one peer within a period); the master is
//!   *objectively down* (ODOWN) when itself plus the peers that answered `down: true` within
//!   the last 5 periods reach `quorum`.
//! - **Election.** The tick that finds ODOWN starts a failover attempt: `current_epoch += 1`,
//!   ask every peer for its vote at once, and (the failover state machine's first step, the
//!   same tick) vote for the most voted candidate or itself; each later tick counts the
//!   votes again (`sentinelGetLeader`). The failover then moves one state per tick: elected,
//!   replica selected, REPLICAOF NO ONE sent, and — after ROLE confirms — the others
//!   reconfigured and the switch. A sentinel votes at most once per epoch, for the
//!   first candidate that asks (Redis's `sentinelVoteLeader`: only for epochs above the last
//!   one it voted in, and not below its current epoch, which it raises to the request's).
//!   Voting for *another* candidate holds back its own failover attempts for
//!   2 × `failover_timeout_ns` + up to 1 s, as in Redis, which is what ends split votes. The
//!   candidate leads with votes ≥ max(quorum, sentinels / 2 + 1). Not elected within
//!   min(10 s, failover timeout) of the attempt's start: `-failover-abort-not-elected`, and
//!   the next attempt comes no earlier than 2 × `failover_timeout_ns` after that start
//!   (plus the random desync of up to 1 s drawn at the start) — Redis's rule, and what its
//!   documentation of `failover-timeout` says.
//! - **Promotion.** The leader picks the replica with the lowest non-zero replica-priority,
//!   then the largest reported offset, then the smallest name (standing for the run id),
//!   among nodes that are not SDOWN, last reported being replicas, and answered PING and ROLE
//!   within the last 5 periods. It sends it `REPLICAOF NO ONE` and waits for a ROLE reply (to
//!   a ROLE sent after that command) saying `master` (`+promoted-slave`, RECONF_SLAVES): from
//!   then on `GetMaster` answers the promoted node (`sentinelGetCurrentMasterAddress`). No
//!   confirmation within `failover_timeout_ns`: `-failover-abort-slave-timeout`. On the next
//!   ticks it sends `REPLICAOF <new> 6379` to every other replica it can reach
//!   (`+slave-reconf-sent`); once each replica that is not SDOWN reports following the new
//!   master (or the failover timeout passed) the failover ends (`+failover-end`), and at the
//!   end of that tick the promoted node becomes the master in the failover's epoch
//!   (`+switch-master`) and `Hello` goes to every other sentinel, then every 2 s.
//! - **Configuration propagation.** A `Hello` with a higher configuration epoch than this
//!   sentinel's replaces its view of the master (`+config-update-from`, `+switch-master`) and
//!   ends any failover attempt of its own. `GetMaster` is answered from the current view,
//!   however stale (or the promoted node, while this sentinel's failover reconfigures).
//! - **Reconfiguration of stragglers.** When a sentinel switches master (as leader or through a
//!   Hello) every other node of the group must follow the new master. A node that reports
//!   `master` (the returning old master) is sent `REPLICAOF <new>` once it has reported so for
//!   8 s (Redis waits 4 publish periods "to receive new configs, if any") and while the new
//!   master looks sane (not SDOWN, reports `master`): `+convert-to-slave`, repeated at most
//!   every 8 s while it stays a master. A replica that follows another master is sent
//!   `REPLICAOF <new>` once `failover_timeout_ns` has passed since the switch or the last
//!   REPLICAOF sent to it: `+fix-slave-config`. A node is left alone from the moment it
//!   reports following the new master.
//!
//! Durable state (Redis's sentinel.conf, flushed on every change): the master, the
//! configuration and current epochs, the last vote, and which nodes still have to be made to
//! follow the master. It survives `on_restart(true)`; `on_restart(false)` (disk lost) goes back
//! to the initial configuration. Everything else — request tracking, SDOWN/ODOWN, a failover in
//! progress and its timers — starts afresh after a restart, as Redis keeps it in memory.
//!
//! Simplified compared with Redis 7.0 (deliberately):
//! - Time is the node's monotonic clock. Redis measures with `mstime()` (wall time) and has a
//!   TILT mode to survive clock jumps; neither is modelled, so wall-clock steps do not disturb
//!   a sentinel here.
//! - Peers are configured, not discovered; sentinels are not pinged (no sentinel SDOWN); Hello
//!   goes from sentinel to sentinel, not through the nodes' pub/sub channel, and only once a
//!   failover happened (a Hello of epoch 0 can change nothing).
//! - Replica reconfiguration is not rate-limited by `parallel-syncs` (all at once), and a
//!   replica counts as reconfigured when its ROLE names the new master (Redis also waits for
//!   its link to be up); replicas that miss the command are fixed later by the straggler rule.
//! - A question to a peer is not repeated on every tick while one younger than a period is
//!   in flight (Redis repeats it; the answer is the same).
//! - Replicas are not excluded for a long-down master link (`master_link_down_time`), and
//!   there is one monitored master per sentinel.
//! - The failover proceeds when the old master comes back meanwhile (as Redis does); no
//!   scripts, no `SENTINEL FAILOVER` command.

use std::cmp::Reverse;

use crate::history::Observation;
use crate::process::{Cx, Process};
use crate::proto::sentinel::{SentinelRequest, SentinelResponse};
use crate::proto::{Bytes, Command, Msg, Reply};
use crate::time::{NS_PER_MS, NS_PER_S, ProcId};

/// The port every node is addressed by in REPLICAOF: the model names nodes, the port is
/// decoration that keeps the command shaped like Redis's.
const REDIS_PORT: &[u8] = b"6379";
/// SENTINEL_ELECTION_TIMEOUT: how long a candidate waits for votes (capped by the failover
/// timeout).
const ELECTION_TIMEOUT_NS: u64 = 10 * NS_PER_S;
/// SENTINEL_MAX_DESYNC: random delay added to a failover start so that sentinels that saw
/// ODOWN at the same time do not split the vote forever.
const MAX_DESYNC_MS: u64 = 1000;
/// SENTINEL_PUBLISH_PERIOD × 4: how long a demoted node must have reported `master` before
/// it is converted, so that a newer configuration has time to arrive first.
const CONVERT_WAIT_NS: u64 = 8 * NS_PER_S;
/// SENTINEL_INFO_PERIOD × 2: slack before a master that reports being a replica counts as
/// down.
const ROLE_MISMATCH_GRACE_NS: u64 = 20 * NS_PER_S;
/// Replies older than this many ping periods are not used (SENTINEL_ASK_PERIOD × 5 for peer
/// answers; Redis's 5 × ping period for replicas worth promoting).
const FRESH_PERIODS: u64 = 5;

/// Request ids carry their kind in the low bits, so a reply is matched to what was asked
/// without a table of pending requests.
const KIND_BITS: u32 = 3;
const KIND_MASK: u64 = (1 << KIND_BITS) - 1;
const KIND_PING: u64 = 0;
const KIND_ROLE: u64 = 1;
const KIND_REPLICAOF: u64 = 2;
const KIND_ASK: u64 = 3;
const KIND_HELLO: u64 = 4;

/// Timer tags are `generation << 1 | kind`; the tick is the only timer.
const TIMER_TICK: u64 = 0;
/// `CONFIG_DEFAULT_HZ`: the timer runs at `hz = 10 + rand() % 10` (sentinel.c 7.0.15:5369,
/// redrawn after every tick), so every 1000/hz ms — 52 to 100 ms.
const BASE_HZ: u64 = 10;
/// SENTINEL_INFO_PERIOD (sentinel.c:83): INFO (ROLE here) to masters and replicas; replicas
/// of a master that is ODOWN or failing over get it every second (sentinel.c:3131-3142).
const INFO_PERIOD_NS: u64 = 10 * NS_PER_S;
const INFO_FAST_PERIOD_NS: u64 = NS_PER_S;
/// SENTINEL_PUBLISH_PERIOD (sentinel.c:84): the hello period.
const PUBLISH_PERIOD_NS: u64 = 2 * NS_PER_S;
/// SENTINEL_MAX_PENDING_COMMANDS: no periodic command to a link with this many unanswered.
const MAX_PENDING: u32 = 100;
/// SENTINEL_MIN_LINK_RECONNECT_PERIOD.
const MIN_LINK_RECONNECT_PERIOD_NS: u64 = 15 * NS_PER_S;

/// Configuration of one sentinel (Redis's `sentinel monitor` and friends).
#[derive(Clone, Debug)]
pub struct SentinelConfig {
    /// Every sentinel of the group, this one included (ids of processes in the world).
    pub sentinels: Vec<ProcId>,
    /// Every Redis node of the monitored group: (process id, name used as host in REPLICAOF,
    /// replica-priority; 0 = never promote).
    pub nodes: Vec<(ProcId, String, u32)>,
    pub initial_master: ProcId,
    pub quorum: usize,
    /// `down-after-milliseconds` (Redis default 30 s).
    pub down_after_ns: u64,
    /// `failover-timeout` (Redis default 180 s). A failed attempt is retried no earlier than
    /// twice this after it started.
    pub failover_timeout_ns: u64,
    /// Period of PING/ROLE to nodes and of the questions to other sentinels (1 s in Redis).
    pub ping_period_ns: u64,
}

/// A node's role as its last ROLE reply gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reported {
    Master {
        offset: i64,
    },
    Replica {
        /// Index (in the config's nodes) of the master it names; None: not a group node.
        following: Option<usize>,
        offset: i64,
    },
}

impl Reported {
    fn is_master(self) -> bool {
        matches!(self, Reported::Master { .. })
    }
    fn offset(self) -> i64 {
        match self {
            Reported::Master { offset } | Reported::Replica { offset, .. } => offset,
        }
    }
}

/// Requests of one kind to one peer: which reply ids are still welcome.
#[derive(Clone, Copy, Debug)]
struct ReqTrack {
    // Invariant: answered_id <= sent_id; a reply is accepted only for an id in
    // (answered_id, sent_id], so late duplicates and replies to a previous incarnation are
    // ignored.
    sent_id: u64,
    answered_id: u64,
    sent_ns: u64,
}

impl ReqTrack {
    fn starting_at(floor_id: u64) -> ReqTrack {
        ReqTrack {
            sent_id: floor_id,
            answered_id: floor_id,
            sent_ns: 0,
        }
    }
    fn sent(&mut self, id: u64, now_ns: u64) {
        self.sent_id = id;
        self.sent_ns = now_ns;
    }
    fn accept(&mut self, id: u64) -> bool {
        let ok = id > self.answered_id && id <= self.sent_id;
        if ok {
            self.answered_id = id;
        }
        ok
    }
    /// A request is in flight and was sent less than `period_ns` ago.
    fn busy(&self, now_ns: u64, period_ns: u64) -> bool {
        self.answered_id < self.sent_id && now_ns.saturating_sub(self.sent_ns) < period_ns
    }
    /// Replies to what was sent so far are no longer wanted.
    fn forget(&mut self) {
        self.answered_id = self.sent_id;
    }
}

/// What this sentinel knows of one Redis node (volatile).
#[derive(Clone, Debug)]
struct NodeView {
    /// Last valid PING reply (Redis's `last_avail_time`).
    last_valid_ns: u64,
    /// Last PING reply of any kind (`last_pong_time`).
    last_pong_ns: u64,
    /// Sent time of the oldest PING still unanswered (`act_ping_time`): SDOWN counts
    /// down-after from it, so a silent node is down D after the first ping it ignored, and a
    /// node whose connection was refused D after the reconnect's ping.
    act_ping_ns: Option<u64>,
    last_ping_ns: Option<u64>,
    /// The command link is closed (`link->disconnected`): its host refused or reset it.
    link_down: bool,
    last_reconn_ns: Option<u64>,
    /// When the link last came up (`cc_conn_time`).
    conn_ns: u64,
    /// Commands sent on the link and not yet answered (`pending_commands`).
    pending: u32,
    /// This failover's REPLICAOF <promoted> went to it (SRI_RECONF_SENT).
    failover_reconf_sent: bool,
    sdown: bool,
    /// None until the first ROLE reply, and again after a switch of master (Redis recreates
    /// its replica records then).
    role: Option<Reported>,
    /// When the reported role last changed between master and replica.
    role_since_ns: u64,
    role_reply_ns: Option<u64>,
    ping: ReqTrack,
    role_req: ReqTrack,
    /// Last REPLICAOF <master> sent to it.
    reconf_sent_ns: Option<u64>,
    /// Since when its configuration may be "fixed": the switch or the last REPLICAOF sent.
    reconf_clock_ns: u64,
}

impl NodeView {
    fn new(now_ns: u64, floor_id: u64) -> NodeView {
        NodeView {
            // Redis's createInstanceLink (sentinel.c:1017-1037): available and pinged "now",
            // not yet connected.
            last_valid_ns: now_ns,
            last_pong_ns: now_ns,
            act_ping_ns: Some(now_ns),
            last_ping_ns: None,
            link_down: true,
            last_reconn_ns: None,
            conn_ns: now_ns,
            pending: 0,
            failover_reconf_sent: false,
            sdown: false,
            role: None,
            role_since_ns: now_ns,
            role_reply_ns: None,
            ping: ReqTrack::starting_at(floor_id),
            role_req: ReqTrack::starting_at(floor_id),
            reconf_sent_ns: None,
            reconf_clock_ns: now_ns,
        }
    }
}

/// What this sentinel knows of another sentinel (volatile).
#[derive(Clone, Debug)]
struct PeerView {
    ask: ReqTrack,
    reply_ns: Option<u64>,
    /// Its last answer: does it see the master SDOWN?
    master_down: bool,
    /// The vote it last reported: (leader, epoch).
    leader: Option<(ProcId, u64)>,
    /// The last epoch in which it was asked for its vote (0: never).
    vote_asked_epoch: u64,
}

impl PeerView {
    fn new(floor_id: u64) -> PeerView {
        PeerView {
            ask: ReqTrack::starting_at(floor_id),
            reply_ns: None,
            master_down: false,
            leader: None,
            vote_asked_epoch: 0,
        }
    }
}

/// This sentinel's failover attempt, if any (Redis's failover_state).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failover {
    Idle,
    /// Candidate in `epoch`, collecting votes (WAIT_START).
    Election {
        epoch: u64,
    },
    /// Elected: picks the replica on the next tick (SELECT_SLAVE).
    SelectReplica {
        epoch: u64,
    },
    /// `promoted` chosen at `since_ns`: `REPLICAOF NO ONE` goes out on the next tick with
    /// its link up (SEND_SLAVEOF_NOONE).
    SendNoOne {
        epoch: u64,
        promoted: usize,
        since_ns: u64,
    },
    /// `REPLICAOF NO ONE` (request `noone_id`) sent to `promoted` at `since_ns`.
    WaitPromotion {
        epoch: u64,
        promoted: usize,
        noone_id: u64,
        since_ns: u64,
    },
    /// `promoted` reported `master` at `since_ns` (`+promoted-slave`): the other replicas
    /// are pointed at it, tick by tick, until they report following it (RECONF_SLAVES);
    /// then `+failover-end` and the switch. Clients asking already get `promoted`.
    Reconf {
        epoch: u64,
        promoted: usize,
        since_ns: u64,
    },
}

/// One sentinel process.
#[derive(Clone, Debug)]
pub struct Sentinel {
    config: SentinelConfig,

    // Durable (sentinel.conf).
    // Invariant: master < config.nodes.len().
    master: usize,
    config_epoch: u64,
    // Invariant: current_epoch >= config_epoch and >= the epoch of `vote`.
    current_epoch: u64,
    /// The last vote given: (leader, epoch). One per epoch, epochs only grow.
    vote: Option<(ProcId, u64)>,
    /// Nodes that have to be made replicas of the master (set at a switch of master, cleared
    /// when the node reports following it).
    // Invariant: len == config.nodes.len() and must_follow[master] == false.
    must_follow: Vec<bool>,

    // Volatile.
    // Invariant: a timer whose tag carries another generation is stale and ignored.
    timer_gen: u64,
    /// Sequence of request ids; never reset, so that replies to requests of an earlier
    /// incarnation fall below every tracker's floor.
    next_seq: u64,
    // Invariant: len == config.nodes.len().
    nodes: Vec<NodeView>,
    // Invariant: len == config.sentinels.len() (the entry of this sentinel is unused).
    peers: Vec<PeerView>,
    odown: bool,
    failover: Failover,
    /// Start of the last failover attempt (random desync included) or of the last vote for
    /// another sentinel; no attempt before it + 2 × failover timeout. None: no limit.
    failover_start_ns: Option<u64>,
    /// When the last hello went to the other sentinels.
    last_hello_ns: Option<u64>,
}

impl Sentinel {
    pub fn new(config: SentinelConfig) -> Sentinel {
        let master = config
            .nodes
            .iter()
            .position(|n| n.0 == config.initial_master)
            .expect("SentinelConfig: initial_master must be one of the nodes");
        assert!(
            config.quorum >= 1,
            "SentinelConfig: quorum must be at least 1"
        );
        assert!(
            config.ping_period_ns > 0,
            "SentinelConfig: ping_period_ns must be positive (it paces the only timer)"
        );
        let (n, s) = (config.nodes.len(), config.sentinels.len());
        Sentinel {
            master,
            config_epoch: 0,
            current_epoch: 0,
            vote: None,
            must_follow: vec![false; n],
            timer_gen: 0,
            next_seq: 0,
            nodes: vec![NodeView::new(0, 0); n],
            peers: vec![PeerView::new(0); s],
            odown: false,
            failover: Failover::Idle,
            failover_start_ns: None,
            last_hello_ns: None,
            config,
        }
    }

    /// The node this sentinel believes is master (what it answers to `GetMaster`).
    pub fn master(&self) -> Option<ProcId> {
        Some(self.config.nodes[self.master].0)
    }

    /// The epoch in which the current master was chosen (0: the initial configuration).
    pub fn config_epoch(&self) -> u64 {
        self.config_epoch
    }

    fn master_proc(&self) -> ProcId {
        self.config.nodes[self.master].0
    }

    fn name(&self, i: usize) -> &str {
        &self.config.nodes[i].1
    }

    fn role_label(&self, i: usize) -> &'static str {
        if i == self.master { "master" } else { "slave" }
    }

    fn node_index(&self, p: ProcId) -> Option<usize> {
        self.config.nodes.iter().position(|n| n.0 == p)
    }

    fn peer_index(&self, p: ProcId) -> Option<usize> {
        self.config.sentinels.iter().position(|&s| s == p)
    }

    fn voters(&self, me: ProcId) -> usize {
        self.config.sentinels.iter().filter(|&&s| s != me).count() + 1
    }

    fn fresh(&self, at_ns: Option<u64>, now_ns: u64) -> bool {
        at_ns
            .is_some_and(|t| now_ns.saturating_sub(t) <= FRESH_PERIODS * self.config.ping_period_ns)
    }

    fn tag(&self, kind: u64) -> u64 {
        (self.timer_gen << 1) | kind
    }

    fn new_id(&mut self, kind: u64) -> u64 {
        self.next_seq += 1;
        (self.next_seq << KIND_BITS) | kind
    }

    fn event(cx: &mut Cx<'_>, what: String) {
        cx.observe(Observation::Sentinel { what });
    }

    fn reset_durable(&mut self) {
        self.master = self
            .config
            .nodes
            .iter()
            .position(|n| n.0 == self.config.initial_master)
            .unwrap_or(0);
        self.config_epoch = 0;
        self.current_epoch = 0;
        self.vote = None;
        self.must_follow.iter_mut().for_each(|f| *f = false);
    }

    fn reset_volatile(&mut self, now_ns: u64) {
        let floor_id = self.next_seq << KIND_BITS;
        self.nodes
            .iter_mut()
            .for_each(|v| *v = NodeView::new(now_ns, floor_id));
        self.peers
            .iter_mut()
            .for_each(|p| *p = PeerView::new(floor_id));
        self.odown = false;
        self.failover = Failover::Idle;
        self.failover_start_ns = None;
        self.last_hello_ns = None;
    }

    // ---- the periodic tick -------------------------------------------------------------

    /// `sentinelTimer` (sentinel.c 7.0.15:5356-5370) for the one monitored master: for every
    /// node the monitoring half (reconnect, periodic PING/ROLE), then SDOWN; for the master
    /// ODOWN, a failover start (its vote requests forced out at once), one step of the
    /// failover state machine, the periodic questions to the peers; hello every 2 s once a
    /// failover happened. Then the next tick in 1000/hz ms, hz redrawn in 10..=19.
    fn tick(&mut self, cx: &mut Cx<'_>) {
        // `sentinelHandleDictOfRedisInstances`: the master first, then its replicas (which
        // see an ODOWN found on this tick: their INFO period drops to 1 s at once), then
        // the switch of a failover that ended on this tick.
        let m = self.master;
        self.monitor_node(cx, m);
        self.update_sdown(cx, m);
        self.check_odown(cx);
        if self.start_failover_if_needed(cx) {
            self.ask_peers(cx, true);
        }
        let ended = self.failover_step(cx);
        self.ask_peers(cx, false);
        for i in (0..self.nodes.len()).filter(|&i| i != m) {
            self.monitor_node(cx, i);
            self.update_sdown(cx, i);
        }
        if let Some((promoted, epoch)) = ended {
            self.switch_to_promoted(cx, promoted, epoch);
        }
        let now = cx.mono_ns;
        if self.config_epoch > 0
            && self
                .last_hello_ns
                .is_none_or(|t| now.saturating_sub(t) > PUBLISH_PERIOD_NS)
        {
            self.send_hello(cx);
        }
        let hz = BASE_HZ + cx.rng.below(BASE_HZ);
        cx.set_timer(1000 / hz * NS_PER_MS, self.tag(TIMER_TICK));
    }

    /// `sentinelReconnectInstance` + `sentinelSendPeriodicCommands` for node `i`.
    fn monitor_node(&mut self, cx: &mut Cx<'_>, i: usize) {
        let now = cx.mono_ns;
        let period = self.config.ping_period_ns;
        if self.nodes[i].link_down {
            // At most one reconnection a ping period; a PING goes out at once on the new
            // link (sentinel.c:2400-2451). If the host refuses it, the link drops again.
            if self.nodes[i]
                .last_reconn_ns
                .is_some_and(|t| now.saturating_sub(t) < period)
            {
                return;
            }
            let v = &mut self.nodes[i];
            v.last_reconn_ns = Some(now);
            v.conn_ns = now;
            v.link_down = false;
            v.pending = 0;
            self.send_ping(cx, i);
        }
        if self.nodes[i].pending >= MAX_PENDING {
            return;
        }
        let fast = i != self.master && (self.odown || self.failover != Failover::Idle);
        let info_period = if fast {
            INFO_FAST_PERIOD_NS
        } else {
            INFO_PERIOD_NS
        };
        if self.nodes[i]
            .role_reply_ns
            .is_none_or(|t| now.saturating_sub(t) > info_period)
        {
            let id = self.send_node(cx, i, KIND_ROLE, Command::Role);
            self.nodes[i].role_req.sent(id, now);
            self.nodes[i].pending += 1;
        }
        // PING when the last reply is older than min(down-after, 1 s) and the last PING
        // older than half that (sentinel.c:3146-3166).
        let ping_period = self.config.down_after_ns.min(period);
        let v = &self.nodes[i];
        if now.saturating_sub(v.last_pong_ns) > ping_period
            && v.last_ping_ns
                .is_none_or(|t| now.saturating_sub(t) > ping_period / 2)
        {
            self.send_ping(cx, i);
        }
    }

    /// `sentinelSendPing`: the active-ping clock starts only if the previous ping was
    /// answered.
    fn send_ping(&mut self, cx: &mut Cx<'_>, i: usize) {
        let now = cx.mono_ns;
        let id = self.send_node(cx, i, KIND_PING, Command::Ping(None));
        let v = &mut self.nodes[i];
        v.ping.sent(id, now);
        v.pending += 1;
        v.last_ping_ns = Some(now);
        v.act_ping_ns.get_or_insert(now);
    }

    fn send_node(&mut self, cx: &mut Cx<'_>, i: usize, kind: u64, cmd: Command) -> u64 {
        let id = self.new_id(kind);
        cx.send(self.config.nodes[i].0, Msg::Request { id, cmd });
        id
    }

    fn send_replicaof_master(&mut self, cx: &mut Cx<'_>, i: usize) {
        self.send_replicaof(cx, i, self.master);
    }

    fn send_replicaof(&mut self, cx: &mut Cx<'_>, i: usize, target: usize) {
        let host = Bytes::from(self.name(target));
        let cmd = Command::ReplicaOf(Some((host, Bytes::from_slice(REDIS_PORT))));
        self.send_node(cx, i, KIND_REPLICAOF, cmd);
        self.nodes[i].reconf_sent_ns = Some(cx.mono_ns);
        self.nodes[i].reconf_clock_ns = cx.mono_ns;
    }

    fn update_sdown(&mut self, cx: &mut Cx<'_>, i: usize) {
        let now = cx.mono_ns;
        // A link up for 15 s whose PING has gone unanswered for half of down-after is
        // closed, to be reopened on a later tick (sentinel.c:4430-4448): what keeps a link
        // to a stopped node from filling up with unanswered commands for ever.
        let half = self.config.down_after_ns / 2;
        let v = &mut self.nodes[i];
        if !v.link_down
            && now.saturating_sub(v.conn_ns) > MIN_LINK_RECONNECT_PERIOD_NS
            && v.act_ping_ns.is_some_and(|t| now.saturating_sub(t) > half)
            && now.saturating_sub(v.last_pong_ns) > half
        {
            v.link_down = true;
            v.pending = 0;
        }
        let v = &self.nodes[i];
        // sentinelCheckSubjectivelyDown (sentinel.c:4421-4428).
        let elapsed = match v.act_ping_ns {
            Some(t) => now.saturating_sub(t),
            None if v.link_down => now.saturating_sub(v.last_valid_ns),
            None => 0,
        };
        let silent = elapsed > self.config.down_after_ns;
        let demoted = i == self.master
            && matches!(v.role, Some(Reported::Replica { .. }))
            && now.saturating_sub(v.role_since_ns)
                > self.config.down_after_ns + ROLE_MISMATCH_GRACE_NS;
        let sdown = silent || demoted;
        if sdown != v.sdown {
            self.nodes[i].sdown = sdown;
            let sign = if sdown { '+' } else { '-' };
            let what = format!("{sign}sdown {} {}", self.role_label(i), self.name(i));
            Self::event(cx, what);
        }
    }

    fn check_odown(&mut self, cx: &mut Cx<'_>) {
        let now = cx.mono_ns;
        let m = self.master;
        let mut agree = 0;
        if self.nodes[m].sdown {
            agree = 1 + self
                .config
                .sentinels
                .iter()
                .zip(&self.peers)
                .filter(|(s, p)| **s != cx.me && p.master_down && self.fresh(p.reply_ns, now))
                .count();
        }
        let odown = self.nodes[m].sdown && agree >= self.config.quorum;
        if odown != self.odown {
            self.odown = odown;
            let what = if odown {
                format!(
                    "+odown master {} #quorum {agree}/{}",
                    self.name(m),
                    self.config.quorum
                )
            } else {
                format!("-odown master {}", self.name(m))
            };
            Self::event(cx, what);
        }
    }

    /// Asks every peer without a fresh request in flight whether it sees the master down,
    /// and for its vote when a failover attempt is under way.
    /// `sentinelAskMasterStateToOtherSentinels`: while the master is SDOWN, each peer is
    /// asked once its last answer is a period old (`forced`: at once, the vote request of a
    /// failover that just started). Not twice while a question is in flight and younger
    /// than a period (Redis asks on every tick then; the answer is the same).
    fn ask_peers(&mut self, cx: &mut Cx<'_>, forced: bool) {
        for k in 0..self.config.sentinels.len() {
            self.ask_peer(cx, k, forced);
        }
    }

    fn ask_peer(&mut self, cx: &mut Cx<'_>, k: usize, forced: bool) {
        let peer = self.config.sentinels[k];
        let (now, period) = (cx.mono_ns, self.config.ping_period_ns);
        let p = &self.peers[k];
        let recent = p.reply_ns.is_some_and(|t| now.saturating_sub(t) < period);
        if !self.nodes[self.master].sdown
            || peer == cx.me
            || (!forced && (recent || p.ask.busy(now, period)))
        {
            return;
        }
        // A failover in any state asks with this sentinel's id (sentinel.c:4610-4612), in
        // the current epoch.
        let (epoch, vote_for) = match self.failover {
            Failover::Idle => (self.current_epoch, None),
            _ => {
                self.peers[k].vote_asked_epoch = self.current_epoch;
                (self.current_epoch, Some(cx.me))
            }
        };
        let id = self.new_id(KIND_ASK);
        self.peers[k].ask.sent(id, cx.mono_ns);
        let req = SentinelRequest::IsMasterDown {
            master: self.master_proc(),
            epoch,
            vote_for,
        };
        cx.send(peer, Msg::SentinelReq { id, req });
    }

    fn send_hello(&mut self, cx: &mut Cx<'_>) {
        self.last_hello_ns = Some(cx.mono_ns);
        let (master, config_epoch) = (self.master_proc(), self.config_epoch);
        for k in 0..self.config.sentinels.len() {
            let peer = self.config.sentinels[k];
            if peer == cx.me {
                continue;
            }
            let id = self.new_id(KIND_HELLO);
            let req = SentinelRequest::Hello {
                master,
                config_epoch,
            };
            cx.send(peer, Msg::SentinelReq { id, req });
        }
    }

    // ---- failover ----------------------------------------------------------------------

    fn desync_ns(cx: &mut Cx<'_>) -> u64 {
        cx.rng.below(MAX_DESYNC_MS) * NS_PER_MS
    }

    /// `sentinelStartFailoverIfNeeded` + `sentinelStartFailover` (sentinel.c:4816-4880): on
    /// the tick that finds the master ODOWN with no failover running and none started in
    /// the last 2 × failover-timeout; the start time carries a random desync of up to 1 s
    /// (`rand() % SENTINEL_MAX_DESYNC`). True: a failover began (ask the peers at once).
    fn start_failover_if_needed(&mut self, cx: &mut Cx<'_>) -> bool {
        if !self.odown || self.failover != Failover::Idle {
            return false;
        }
        let now = cx.mono_ns;
        let not_before_ns = self
            .failover_start_ns
            .map_or(0, |s| s.saturating_add(2 * self.config.failover_timeout_ns));
        if now < not_before_ns {
            return false;
        }
        self.current_epoch += 1;
        let epoch = self.current_epoch;
        Self::event(cx, format!("+new-epoch {epoch}"));
        Self::event(
            cx,
            format!("+try-failover master {}", self.name(self.master)),
        );
        self.failover_start_ns = Some(now + Self::desync_ns(cx));
        self.failover = Failover::Election { epoch };
        true
    }

    /// Redis's `sentinelVoteLeader`: returns the vote to report, (leader, its epoch).
    fn vote_leader(
        &mut self,
        cx: &mut Cx<'_>,
        candidate: ProcId,
        req_epoch: u64,
    ) -> (Option<ProcId>, u64) {
        if req_epoch > self.current_epoch {
            self.current_epoch = req_epoch;
            Self::event(cx, format!("+new-epoch {req_epoch}"));
        }
        let voted_epoch = self.vote.map_or(0, |v| v.1);
        if voted_epoch < req_epoch && self.current_epoch <= req_epoch {
            self.vote = Some((candidate, req_epoch));
            Self::event(
                cx,
                format!("+vote-for-leader sentinel#{} {req_epoch}", candidate.0),
            );
            if candidate != cx.me {
                // Give the sentinel we voted for time to finish before trying ourselves.
                self.failover_start_ns = Some(cx.mono_ns + Self::desync_ns(cx));
            }
        }
        match self.vote {
            Some((leader, epoch)) => (Some(leader), epoch),
            None => (None, 0),
        }
    }

    /// `sentinelFailoverWaitStart` with `sentinelGetLeader` (sentinel.c:4700-4760, 4994):
    /// count the peers' votes in the current epoch, give this sentinel's own vote (to the
    /// most voted, else itself) if it has none yet, and lead with max(quorum, majority).
    fn wait_start(&mut self, cx: &mut Cx<'_>, epoch: u64) {
        let (me, now) = (cx.me, cx.mono_ns);
        let mut counts: Vec<(ProcId, usize)> = Vec::new();
        let add = |c: ProcId, counts: &mut Vec<(ProcId, usize)>| match counts
            .iter_mut()
            .find(|(p, _)| *p == c)
        {
            Some((_, n)) => *n += 1,
            None => counts.push((c, 1)),
        };
        for (s, p) in self.config.sentinels.iter().zip(&self.peers) {
            if *s == me || !self.fresh(p.reply_ns, now) {
                continue;
            }
            if let Some((l, e)) = p.leader
                && e == self.current_epoch
            {
                add(l, &mut counts);
            }
        }
        // Most votes; ties to the first counted (Redis: dict order).
        let winner = counts
            .iter()
            .fold(None::<(ProcId, usize)>, |best, &(c, n)| match best {
                Some((_, m)) if m >= n => best,
                _ => Some((c, n)),
            })
            .map(|(c, _)| c);
        let (my_vote, my_epoch) = self.vote_leader(cx, winner.unwrap_or(me), epoch);
        if let Some(v) = my_vote
            && my_epoch == epoch
        {
            add(v, &mut counts);
        }
        let (leader, votes) = counts
            .iter()
            .fold(None::<(ProcId, usize)>, |best, &(c, n)| match best {
                Some((_, m)) if m >= n => best,
                _ => Some((c, n)),
            })
            .unwrap_or((me, 0));
        let needed = self.config.quorum.max(self.voters(me) / 2 + 1);
        if leader == me && votes >= needed && self.current_epoch == epoch {
            let what = format!("+elected-leader master {}", self.name(self.master));
            Self::event(cx, what);
            let what = format!(
                "+failover-state-select-slave master {}",
                self.name(self.master)
            );
            Self::event(cx, what);
            self.failover = Failover::SelectReplica { epoch };
            return;
        }
        let start = self.failover_start_ns.unwrap_or(now);
        let timeout = ELECTION_TIMEOUT_NS.min(self.config.failover_timeout_ns);
        if now.saturating_sub(start) > timeout {
            self.abort_failover(cx, "not-elected");
        }
    }

    fn abort_failover(&mut self, cx: &mut Cx<'_>, why: &str) {
        let what = format!("-failover-abort-{why} master {}", self.name(self.master));
        Self::event(cx, what);
        self.failover = Failover::Idle;
    }

    /// One step of `sentinelFailoverStateMachine` (sentinel.c:5217-5240), on the tick.
    /// Some((promoted, epoch)): the failover ended (UPDATE_CONFIG); switch at the tick's end.
    fn failover_step(&mut self, cx: &mut Cx<'_>) -> Option<(usize, u64)> {
        let now = cx.mono_ns;
        let timeout = self.config.failover_timeout_ns;
        match self.failover {
            Failover::Idle => None,
            Failover::Election { epoch } => {
                self.wait_start(cx, epoch);
                None
            }
            Failover::SelectReplica { epoch } => {
                self.select_for_promotion(cx, epoch);
                None
            }
            Failover::SendNoOne {
                epoch,
                promoted,
                since_ns,
            } => {
                if self.nodes[promoted].link_down {
                    if now.saturating_sub(since_ns) > timeout {
                        self.abort_failover(cx, "slave-timeout");
                    }
                    return None;
                }
                let noone_id =
                    self.send_node(cx, promoted, KIND_REPLICAOF, Command::ReplicaOf(None));
                Self::event(
                    cx,
                    format!("+failover-state-wait-promotion {}", self.name(promoted)),
                );
                self.failover = Failover::WaitPromotion {
                    epoch,
                    promoted,
                    noone_id,
                    since_ns: now,
                };
                None
            }
            Failover::WaitPromotion { since_ns, .. } => {
                if now.saturating_sub(since_ns) > timeout {
                    self.abort_failover(cx, "slave-timeout");
                }
                None
            }
            Failover::Reconf {
                epoch,
                promoted,
                since_ns,
            } => self
                .reconf_replicas(cx, promoted, since_ns)
                .then_some((promoted, epoch)),
        }
    }

    /// Redis's `sentinelSelectSlave`.
    fn select_replica(&self, now_ns: u64) -> Option<usize> {
        let fresh_ns = FRESH_PERIODS * self.config.ping_period_ns;
        (0..self.nodes.len())
            .filter(|&i| {
                let v = &self.nodes[i];
                i != self.master
                    && self.config.nodes[i].2 != 0
                    && !v.sdown
                    && now_ns.saturating_sub(v.last_valid_ns) <= fresh_ns
                    && self.fresh(v.role_reply_ns, now_ns)
                    && matches!(v.role, Some(Reported::Replica { .. }))
            })
            .min_by_key(|&i| {
                let offset = self.nodes[i].role.map_or(0, Reported::offset);
                let (_, name, priority) = &self.config.nodes[i];
                (*priority, Reverse(offset), name.as_str())
            })
    }

    /// `sentinelFailoverSelectSlave`.
    fn select_for_promotion(&mut self, cx: &mut Cx<'_>, epoch: u64) {
        let Some(i) = self.select_replica(cx.mono_ns) else {
            let what = format!(
                "-failover-abort-no-good-slave master {}",
                self.name(self.master)
            );
            Self::event(cx, what);
            self.failover = Failover::Idle;
            return;
        };
        let offset = self.nodes[i].role.map_or(0, Reported::offset);
        let what = format!(
            "+selected-slave {} (priority {}, offset {offset})",
            self.name(i),
            self.config.nodes[i].2
        );
        Self::event(cx, what);
        Self::event(
            cx,
            format!("+failover-state-send-slaveof-noone {}", self.name(i)),
        );
        self.failover = Failover::SendNoOne {
            epoch,
            promoted: i,
            since_ns: cx.mono_ns,
        };
    }

    /// The promoted replica reported `master` (sentinelRefreshInstanceInfo): RECONF_SLAVES.
    fn promotion_confirmed(&mut self, cx: &mut Cx<'_>, epoch: u64, promoted: usize) {
        Self::event(cx, format!("+promoted-slave {}", self.name(promoted)));
        Self::event(
            cx,
            format!(
                "+failover-state-reconf-slaves master {}",
                self.name(self.master)
            ),
        );
        for v in &mut self.nodes {
            v.failover_reconf_sent = false;
        }
        self.failover = Failover::Reconf {
            epoch,
            promoted,
            since_ns: cx.mono_ns,
        };
    }

    /// `sentinelFailoverReconfNextSlave` + `sentinelFailoverDetectEnd` (sentinel.c:5083-
    /// 5205), then the switch at the end of the same tick (`sentinelFailoverSwitchToPromoted
    /// Slave`). Every reachable replica is sent `REPLICAOF <promoted>` at once (no
    /// `parallel-syncs`); the failover ends when each replica that is not SDOWN reports
    /// following the promoted node, or after the failover timeout.
    fn reconf_replicas(&mut self, cx: &mut Cx<'_>, promoted: usize, since_ns: u64) -> bool {
        let old = self.master;
        for j in 0..self.nodes.len() {
            let v = &self.nodes[j];
            if j == promoted || j == old || v.sdown || v.link_down || v.failover_reconf_sent {
                continue;
            }
            self.send_replicaof(cx, j, promoted);
            self.nodes[j].failover_reconf_sent = true;
            Self::event(cx, format!("+slave-reconf-sent {}", self.name(j)));
        }
        if self.nodes[promoted].sdown {
            return false;
        }
        let not_reconfigured = (0..self.nodes.len())
            .filter(|&j| j != promoted && j != old && !self.nodes[j].sdown)
            .filter(|&j| {
                !matches!(self.nodes[j].role, Some(Reported::Replica { following: Some(f), .. }) if f == promoted)
            })
            .count();
        let timed_out = cx.mono_ns.saturating_sub(since_ns) > self.config.failover_timeout_ns;
        if timed_out {
            Self::event(
                cx,
                format!("+failover-end-for-timeout master {}", self.name(old)),
            );
        }
        if not_reconfigured > 0 && !timed_out {
            return false;
        }
        Self::event(cx, format!("+failover-end master {}", self.name(old)));
        true
    }

    /// `sentinelFailoverSwitchToPromotedSlave`.
    fn switch_to_promoted(&mut self, cx: &mut Cx<'_>, promoted: usize, epoch: u64) {
        let old = self.master;
        self.switch_master(cx, promoted, epoch);
        let what = format!(
            "+switch-master {} {} epoch {epoch}",
            self.name(old),
            self.name(promoted)
        );
        Self::event(cx, what);
        self.send_hello(cx);
    }

    /// Adopts `new` as master in `epoch` (Redis's `sentinelResetMasterAndChangeAddress`).
    fn switch_master(&mut self, cx: &mut Cx<'_>, new: usize, epoch: u64) {
        let now = cx.mono_ns;
        self.master = new;
        self.config_epoch = epoch;
        if epoch > self.current_epoch {
            self.current_epoch = epoch;
            Self::event(cx, format!("+new-epoch {epoch}"));
        }
        for (j, v) in self.nodes.iter_mut().enumerate() {
            self.must_follow[j] = j != new;
            v.reconf_sent_ns = None;
            v.reconf_clock_ns = now;
            // Roles are counted afresh, as Redis recreates its instance records here: a
            // returning old master waits before conversion, and a new master whose last
            // report predates its promotion is not taken for a demoted one.
            let confirmed_master = j == new && matches!(v.role, Some(Reported::Master { .. }));
            if !confirmed_master {
                v.role = None;
                v.role_since_ns = now;
            }
        }
        for p in &mut self.peers {
            p.ask.forget();
            p.reply_ns = None;
            p.master_down = false;
            p.leader = None;
        }
        self.odown = false;
        self.failover = Failover::Idle;
        // "We can failover again ASAP."
        self.failover_start_ns = None;
    }

    fn on_hello(&mut self, cx: &mut Cx<'_>, from: ProcId, master: ProcId, config_epoch: u64) {
        if config_epoch <= self.config_epoch {
            return;
        }
        let Some(new) = self.node_index(master) else {
            return;
        };
        if new == self.master {
            self.config_epoch = config_epoch;
            if config_epoch > self.current_epoch {
                self.current_epoch = config_epoch;
                Self::event(cx, format!("+new-epoch {config_epoch}"));
            }
            return;
        }
        let old = self.master;
        Self::event(cx, format!("+config-update-from sentinel#{}", from.0));
        self.switch_master(cx, new, config_epoch);
        let what = format!(
            "+switch-master {} {} epoch {config_epoch}",
            self.name(old),
            self.name(new)
        );
        Self::event(cx, what);
    }

    // ---- replies -----------------------------------------------------------------------

    fn on_node_reply(&mut self, cx: &mut Cx<'_>, i: usize, id: u64, reply: &Reply) {
        match id & KIND_MASK {
            // Accepting consumes the id even for an invalid answer: it was answered. SDOWN
            // is re-evaluated on the next tick, as Redis does.
            KIND_PING if self.nodes[i].ping.accept(id) => {
                let v = &mut self.nodes[i];
                v.pending = v.pending.saturating_sub(1);
                v.last_pong_ns = cx.mono_ns;
                if ping_reply_valid(reply) {
                    v.last_valid_ns = cx.mono_ns;
                    v.act_ping_ns = None;
                }
            }
            KIND_ROLE if self.nodes[i].role_req.accept(id) => {
                let v = &mut self.nodes[i];
                v.pending = v.pending.saturating_sub(1);
                if let Some(reported) = self.parse_role(reply) {
                    self.on_role(cx, i, id, reported);
                }
            }
            _ => {}
        }
    }

    /// `["master", offset, [...]]` or `["slave", host, port, state, offset]`.
    fn parse_role(&self, reply: &Reply) -> Option<Reported> {
        let Reply::Array(items) = reply else {
            return None;
        };
        match items.as_slice() {
            [Reply::Bulk(role), Reply::Int(offset), ..] if role == b"master" => {
                Some(Reported::Master { offset: *offset })
            }
            [
                Reply::Bulk(role),
                Reply::Bulk(host),
                _port,
                _state,
                Reply::Int(offset),
                ..,
            ] if role == b"slave" => {
                let following = self
                    .config
                    .nodes
                    .iter()
                    .position(|n| n.1.as_bytes() == host.as_slice());
                Some(Reported::Replica {
                    following,
                    offset: *offset,
                })
            }
            _ => None,
        }
    }

    fn on_role(&mut self, cx: &mut Cx<'_>, i: usize, id: u64, reported: Reported) {
        let v = &mut self.nodes[i];
        if v.role.map(Reported::is_master) != Some(reported.is_master()) {
            v.role_since_ns = cx.mono_ns;
        }
        v.role = Some(reported);
        v.role_reply_ns = Some(cx.mono_ns);
        if let Failover::WaitPromotion {
            epoch,
            promoted,
            noone_id,
            ..
        } = self.failover
            && promoted == i
            && id > noone_id
            && reported.is_master()
        {
            self.promotion_confirmed(cx, epoch, i);
            return;
        }
        if i != self.master && self.must_follow[i] {
            self.reconcile(cx, i);
        }
    }

    /// Makes a node that has to follow the master do so (Redis's `+convert-to-slave` and
    /// `+fix-slave-config`).
    fn reconcile(&mut self, cx: &mut Cx<'_>, i: usize) {
        let (now, m) = (cx.mono_ns, self.master);
        let sane =
            !self.nodes[m].sdown && matches!(self.nodes[m].role, Some(Reported::Master { .. }));
        let v = &self.nodes[i];
        match v.role {
            Some(Reported::Replica {
                following: Some(f), ..
            }) if f == m => self.must_follow[i] = false,
            Some(Reported::Master { .. }) => {
                let settled = now.saturating_sub(v.role_since_ns) >= CONVERT_WAIT_NS;
                let quiet = v
                    .reconf_sent_ns
                    .is_none_or(|t| now.saturating_sub(t) >= CONVERT_WAIT_NS);
                if sane && settled && quiet {
                    self.send_replicaof_master(cx, i);
                    Self::event(cx, format!("+convert-to-slave {}", self.name(i)));
                }
            }
            Some(Reported::Replica { .. }) => {
                let due = now.saturating_sub(v.reconf_clock_ns) >= self.config.failover_timeout_ns;
                if sane && due {
                    self.send_replicaof_master(cx, i);
                    Self::event(cx, format!("+fix-slave-config {}", self.name(i)));
                }
            }
            None => {}
        }
    }

    fn on_peer_response(&mut self, cx: &mut Cx<'_>, k: usize, id: u64, resp: SentinelResponse) {
        let SentinelResponse::MasterDown {
            down,
            leader,
            leader_epoch,
        } = resp
        else {
            return;
        };
        if id & KIND_MASK != KIND_ASK || !self.peers[k].ask.accept(id) {
            return;
        }
        let p = &mut self.peers[k];
        p.reply_ns = Some(cx.mono_ns);
        p.master_down = down;
        // As Redis: an answer without a leader ("*") leaves the last known vote in place.
        if let Some(l) = leader {
            p.leader = Some((l, leader_epoch));
        }
        // ODOWN and the election are evaluated on the next tick, as Redis does.
    }

    fn on_sentinel_request(
        &mut self,
        cx: &mut Cx<'_>,
        from: ProcId,
        id: u64,
        req: SentinelRequest,
    ) {
        match req {
            SentinelRequest::GetMaster => {
                // `sentinelGetCurrentMasterAddress`: from RECONF_SLAVES on, the promoted
                // replica, before the switch itself.
                let (master, config_epoch) = match self.failover {
                    Failover::Reconf {
                        promoted, epoch, ..
                    } => (Some(self.config.nodes[promoted].0), epoch),
                    _ => (self.master(), self.config_epoch),
                };
                let resp = SentinelResponse::Master {
                    master,
                    config_epoch,
                };
                cx.send(from, Msg::SentinelResp { id, resp });
            }
            SentinelRequest::IsMasterDown {
                master,
                epoch,
                vote_for,
            } => {
                // A question about a node that is not our master gets "not down", no vote
                // (Redis finds no master at that address).
                let ours = master == self.master_proc();
                let down = ours && self.nodes[self.master].sdown;
                let (leader, leader_epoch) = match vote_for {
                    Some(candidate) if ours => self.vote_leader(cx, candidate, epoch),
                    _ => (None, 0),
                };
                let resp = SentinelResponse::MasterDown {
                    down,
                    leader,
                    leader_epoch,
                };
                cx.send(from, Msg::SentinelResp { id, resp });
            }
            SentinelRequest::Hello {
                master,
                config_epoch,
            } => self.on_hello(cx, from, master, config_epoch),
        }
    }
}

/// Redis accepts `+PONG`, `-LOADING` and `-MASTERDOWN` as signs of life.
fn ping_reply_valid(reply: &Reply) -> bool {
    match reply {
        Reply::Error(e) => e.starts_with("LOADING") || e.starts_with("MASTERDOWN"),
        _ => true,
    }
}

impl Process for Sentinel {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        self.timer_gen += 1;
        self.reset_volatile(cx.mono_ns);
        // The first timer tick: a random part of the longest tick after the start.
        let phase_ns = cx.rng.below(1000 / BASE_HZ * NS_PER_MS);
        cx.set_timer(phase_ns, self.tag(TIMER_TICK));
    }

    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        match msg {
            Msg::Reply { id, reply } => {
                if let Some(i) = self.node_index(from) {
                    self.on_node_reply(cx, i, id, &reply);
                }
            }
            // The node's host refused or reset the connection (its process crashed, the
            // host is up): the link is closed (`instanceLinkConnectionError`) and reopened
            // on a tick at most once a ping period, each time with a PING. The active-ping
            // clock keeps running from the first PING left unanswered.
            Msg::Refused { .. } => {
                if let Some(i) = self.node_index(from) {
                    let v = &mut self.nodes[i];
                    v.link_down = true;
                    v.pending = 0;
                }
            }
            Msg::SentinelReq { id, req } => self.on_sentinel_request(cx, from, id, req),
            Msg::SentinelResp { id, resp } => {
                if let Some(k) = self.peer_index(from)
                    && from != cx.me
                {
                    self.on_peer_response(cx, k, id, resp);
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        if tag >> 1 != self.timer_gen {
            return;
        }
        if tag & 1 == TIMER_TICK {
            self.tick(cx);
        }
    }

    fn on_restart(&mut self, keep_data: bool) {
        if !keep_data {
            self.reset_durable();
        }
        // The clock is not known here; `on_start` follows and sets the times.
        self.reset_volatile(0);
    }
}

#[cfg(test)]
mod tests;
