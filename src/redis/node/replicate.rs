//! How a Redis node replicates and persists, on the state `redis::replication` holds.
//!
//! A master replies to the client first and streams the *effects* of its writes to replicas
//! afterwards (TTLs as absolute `PXAT`/`PEXPIREAT`, expiry as `DEL`, scripts by effects),
//! over the simulated network. Offsets count bytes of the RESP encoding. Replicas apply the
//! stream in order, ack their offset once a second (and on `GETACK`), never expire keys by
//! themselves, and resynchronise fully when they (re)attach or notice a gap (a message lost in
//! a partition stands for a broken connection). Persistence decides what a restart finds.
//! Part of the node (a child module, so that `node.rs` stays the command set): it sees the
//! node's fields, and `replication.rs` below it knows nothing of the node.

use crate::history::Observation;
use crate::proto::command::{ExpireCond, ExpireKind, SetExpiry};
use crate::proto::sentinel::ReplMsg;
use crate::proto::{Bytes, Command, Msg, Reply};
use crate::redis::keyspace::{Keyspace, Value};
use crate::redis::node::{Caller, Fsync, Persistence, RedisNode};
use crate::redis::replication::{
    ACK_PERIOD_NS, LinkState, OS_FLUSH_PERIOD_NS, REPL_TIMEOUT_NS, ReplicaLink, Role, resp_len,
};
use crate::time::{NS_PER_S, ProcId};

impl RedisNode {
    /// Queues the effect of a write for replicas (masters only; a replica's own applying of
    /// the stream is not propagated further). The effect is built only when a backlog keeps
    /// it: a master no replica ever attached to would allocate it (a DEL's key vector) only
    /// to drop it.
    /// The effect also touches the WATCHed keys it names (a connection watching exists
    /// only where clients sent WATCH, so the hot path pays one emptiness check).
    pub(crate) fn propagate(&mut self, cmd: impl FnOnce() -> Command) {
        self.repl.dirty = true;
        let keep = self.repl.backlog && !self.is_replica();
        if !keep && self.conns.is_empty() {
            return;
        }
        let c = cmd();
        self.touch_effect(&c);
        if keep {
            self.repl.pending.push((self.cur_db, c));
        }
    }

    /// Streams the effects of the command just executed and records the client's write
    /// offset. With `appendfsync always` the effects are durable before the reply.
    pub(crate) fn flush_propagation(&mut self, client: Option<ProcId>) {
        self.flush_effects(client, false);
    }

    /// `wrap`: the effects of a script or a transaction, which Redis 7.0 wraps in
    /// MULTI/EXEC when there is more than one, so that a replica applies them together.
    /// Redis 7.0.15 wraps a plain command's several effects too (the lazy-expiry `DEL`
    /// before a `SET`, the `DEL`s of `DEL a b` when both had expired); the model sends
    /// those unwrapped, as it always has (a replica applies one stream message at once
    /// anyway): only its offsets count 29 bytes fewer there. The cron's active-expiry DELs
    /// are sent one by one in Redis too.
    #[inline]
    pub(crate) fn flush_effects(&mut self, client: Option<ProcId>, wrap: bool) {
        // A master with no replica, no connection and no AOF `always` has nothing to do
        // after a write: decided here, without the call.
        // Tested before it is cleared: most commands write nothing, and leave it unstored.
        if self.repl.dirty {
            self.repl.dirty = false;
            self.wrote = true;
            if !self.repl.pending.is_empty()
                || self.config.persistence == Persistence::Aof(Fsync::Always)
            {
                self.flush_dirty(client, wrap);
            }
        }
    }

    /// `flush_effects` after a write with effects pending or a disk to write.
    #[inline(never)]
    fn flush_dirty(&mut self, client: Option<ProcId>, wrap: bool) {
        if self.config.persistence == Persistence::Aof(Fsync::Always) {
            self.save_to_disk();
        }
        if self.repl.pending.is_empty() {
            return;
        }
        let effects = std::mem::take(&mut self.repl.pending);
        let wrap = wrap && effects.len() > 1;
        let mut cmds = Vec::with_capacity(effects.len() + usize::from(wrap) * 2);
        for (i, (db, c)) in effects.into_iter().enumerate() {
            // The SELECT of the first effect goes before MULTI, as Redis sends it.
            if db != self.repl.stream_db {
                cmds.push(Command::Select(i64::from(db)));
                self.repl.stream_db = db;
            }
            if wrap && i == 0 {
                cmds.push(Command::Multi);
            }
            cmds.push(c);
        }
        if wrap {
            cmds.push(Command::Exec);
        }
        let start = self.repl.offset;
        self.repl.offset += cmds.iter().map(resp_len).sum::<u64>();
        for r in &self.repl.replicas {
            self.repl.outbox.push((
                r.proc,
                Msg::Repl(ReplMsg::Stream {
                    offset: start,
                    cmds: cmds.clone(),
                }),
            ));
        }
        if let Some(c) = client {
            self.repl.woff.insert(c, self.repl.offset);
        }
    }

    /// `min-replicas-to-write` / `min-replicas-max-lag`.
    pub(crate) fn enough_good_replicas(&self) -> bool {
        let need = self.config.min_replicas_to_write as usize;
        if need == 0 {
            return true;
        }
        let max_lag = self.config.min_replicas_max_lag_s * NS_PER_S;
        let now = self.repl.mono_ns;
        // refreshGoodSlavesCount (replication.c:3381-3398): online, and lag <= max lag.
        self.repl
            .replicas
            .iter()
            .filter(|r| r.online && now.saturating_sub(r.last_ack_mono_ns) <= max_lag)
            .count()
            >= need
    }

    /// replicationCountAcksByOffset (replication.c:3444-3457): online replicas whose ack
    /// reached `woff`. A replica still in its first full sync has acked 0, which a client
    /// that wrote before any replica attached (offset 0) would otherwise count as synced.
    pub(crate) fn acked_at(&self, woff: u64) -> usize {
        self.repl
            .replicas
            .iter()
            .filter(|r| r.online && r.ack_offset >= woff)
            .count()
    }

    /// Replicas that acked the client's last write (all of them for a client that never
    /// wrote: `WAIT 0 0` answers the number of replicas).
    pub(crate) fn acked_replicas(&self, client: Option<ProcId>) -> usize {
        self.acked_at(client.map_or(0, |c| self.repl.client_woff(c)))
    }

    pub(crate) fn request_acks(&mut self) {
        for r in &self.repl.replicas {
            self.repl.outbox.push((r.proc, Msg::Repl(ReplMsg::GetAck)));
        }
    }

    pub(super) fn peer_name(&self, p: ProcId) -> Bytes {
        self.config
            .peers
            .iter()
            .find(|(_, q)| *q == p)
            .map_or_else(|| Bytes::from("?"), |(n, _)| n.clone())
    }

    pub(crate) fn role_reply(&self) -> Reply {
        let bulk = |b: &[u8]| Reply::Bulk(b.to_vec());
        match self.role {
            Role::Master => Reply::Array(vec![
                bulk(b"master"),
                Reply::Int(self.repl.offset as i64),
                Reply::Array(
                    self.repl
                        .replicas
                        .iter()
                        .map(|r| {
                            Reply::Array(vec![
                                bulk(&self.peer_name(r.proc)),
                                bulk(b"6379"),
                                bulk(r.ack_offset.to_string().as_bytes()),
                            ])
                        })
                        .collect(),
                ),
            ]),
            Role::Replica { master, state } => Reply::Array(vec![
                bulk(b"slave"),
                bulk(&self.peer_name(master)),
                bulk(b"6379"),
                bulk(match state {
                    LinkState::Connecting => b"connecting",
                    LinkState::Connected => b"connected",
                }),
                Reply::Int(self.repl.offset as i64),
            ]),
        }
    }

    fn note(&mut self, what: String) {
        self.pending.push(Observation::Replication { what });
    }

    /// `REPLICAOF host port` / `REPLICAOF NO ONE`.
    pub(crate) fn replica_of(&mut self, target: Option<&(Bytes, Bytes)>) -> Reply {
        match target {
            None => {
                if self.is_replica() {
                    self.role = Role::Master;
                    // A new replication history starts here; keys it holds now expire by this
                    // node's own clock.
                    self.repl.replicas.clear();
                    let off = self.repl.offset;
                    self.note(format!(
                        "REPLICAOF NO ONE: promoted to master at offset {off}"
                    ));
                    self.pending
                        .push(Observation::Fact(crate::history::Fact::Promoted));
                }
                Reply::Ok
            }
            Some((host, _port)) => {
                let Some(&(_, master)) = self.config.peers.iter().find(|(n, _)| n[..] == host[..])
                else {
                    return Reply::Error(format!(
                        "ERR unknown host '{}' (not a node of this model)",
                        String::from_utf8_lossy(host)
                    ));
                };
                if matches!(self.role, Role::Replica { master: m, .. } if m == master) {
                    return Reply::Status("OK Already connected to specified master".into());
                }
                // replicationSetMaster: clients blocked on what was a master cannot stay.
                self.unblock_for_role_change();
                self.start_replication(master);
                Reply::Ok
            }
        }
    }

    pub(crate) fn start_replication(&mut self, master: ProcId) {
        self.role = Role::Replica {
            master,
            state: LinkState::Connecting,
        };
        self.repl.replicas.clear();
        self.repl.outbox.push((master, Msg::Repl(ReplMsg::Sync)));
        self.repl.sync_requested_mono_ns = self.repl.mono_ns;
        let name = String::from_utf8_lossy(&self.peer_name(master)).into_owned();
        self.note(format!("replicating from {name}: full sync requested"));
    }

    /// What is in memory becomes what is on disk (every db).
    pub(crate) fn save_to_disk(&mut self) {
        self.disk.snapshot = self.keyspace.clone();
        if !self.functions.is_empty() || !self.disk.snapshot_functions.is_empty() {
            self.disk.snapshot_functions = self.functions.clone();
        }
        if !self.other_dbs.is_empty() || !self.disk.snapshot_other_dbs.is_empty() {
            self.disk.snapshot_other_dbs = self.other_dbs.clone();
        }
    }

    /// The dataset as commands that rebuild it, expired keys included (a full sync copies
    /// logically expired keys too): every db that holds keys, each after its SELECT, and
    /// last a SELECT of the db the stream continues in.
    fn snapshot_cmds(&self) -> Vec<Command> {
        let mut cmds = self.function_snapshot_cmds();
        cmds.reserve(self.keyspace.len());
        let mut selected = 0;
        for d in self.used_dbs() {
            let Some(ks) = self.db_ref(d) else { continue };
            if d != selected {
                cmds.push(Command::Select(i64::from(d)));
                selected = d;
            }
            Self::keyspace_cmds(ks, &mut cmds);
        }
        if selected != self.repl.stream_db {
            cmds.push(Command::Select(i64::from(self.repl.stream_db)));
        }
        cmds
    }

    fn keyspace_cmds(ks: &Keyspace, cmds: &mut Vec<Command>) {
        for (k, e) in ks.iter() {
            match &e.value {
                Value::Str(v) => cmds.push(Command::Set {
                    key: k.clone(),
                    value: v.clone(),
                    cond: None,
                    get: false,
                    expiry: e.expire_at_ms.map(SetExpiry::PxAt),
                }),
                Value::List(_) | Value::Hash(_) => {
                    cmds.push(match &e.value {
                        Value::List(items) => Command::RPush(k.clone(), items.clone()),
                        Value::Hash(fields) => Command::HSet(k.clone(), fields.clone()),
                        Value::Str(_) => unreachable!("strings are sent as SET above"),
                    });
                    if let Some(t) = e.expire_at_ms {
                        cmds.push(Command::Expire {
                            kind: ExpireKind::PExpireAt,
                            key: k.clone(),
                            when: t,
                            cond: ExpireCond::default(),
                        });
                    }
                }
            }
        }
    }

    fn apply_from_master(&mut self, now_ms: i64, cmds: &[Command]) {
        self.repl.applying_master_stream = true;
        self.switch_db(self.repl.stream_db);
        for c in cmds {
            match c {
                Command::Select(d) => {
                    if let Ok(d) = u8::try_from(*d)
                        && usize::from(d) < crate::redis::node::connection::DATABASES
                    {
                        self.switch_db(d);
                    }
                }
                // The whole message is applied at once: the bracket needs no action.
                Command::Multi | Command::Exec => {}
                // The master's DEL removes the key whatever this node's clock says.
                Command::Del(keys) => {
                    for k in keys {
                        self.remove_replicated(k);
                    }
                }
                _ => {
                    let _ = self.execute_unchecked(now_ms, c);
                }
            }
        }
        self.repl.stream_db = self.cur_db;
        self.switch_db(0);
        self.repl.applying_master_stream = false;
    }

    /// Handles replication traffic.
    pub fn on_repl(&mut self, now_ms: i64, now_mono_ns: u64, from: ProcId, msg: ReplMsg) {
        self.repl.mono_ns = now_mono_ns;
        match (msg, self.role) {
            (ReplMsg::Sync, Role::Master) => self.full_sync_to(from),
            // An ack from a replica this master does not know: the master restarted and the
            // replica's connection broke; it would reconnect and resync.
            (ReplMsg::Ack { offset }, Role::Master) => {
                match self.repl.replicas.iter_mut().find(|r| r.proc == from) {
                    Some(r) => {
                        r.ack_offset = r.ack_offset.max(offset);
                        r.last_ack_mono_ns = now_mono_ns;
                        // The first ack after the full sync: the replica is online
                        // (`replicaPutOnline` also sets `repl_ack_time`, as here).
                        r.online = true;
                        self.wake_waiters();
                    }
                    None => self.full_sync_to(from),
                }
            }
            (ReplMsg::FullSync { offset, cmds }, Role::Replica { master, .. })
                if from == master =>
            {
                self.touch_flushed(None);
                self.keyspace.clear();
                self.functions.flush();
                for ks in &mut self.other_dbs {
                    ks.clear();
                }
                self.repl.stream_db = 0;
                self.apply_from_master(now_ms, &cmds);
                self.repl.offset = offset;
                // A replica keeps a backlog too: promoted, it continues the offsets.
                self.repl.backlog = true;
                self.role = Role::Replica {
                    master,
                    state: LinkState::Connected,
                };
                self.note(format!(
                    "full sync done: {} keys, offset {offset}",
                    cmds.len()
                ));
                self.repl
                    .outbox
                    .push((master, Msg::Repl(ReplMsg::Ack { offset })));
            }
            (
                ReplMsg::Stream { offset, cmds },
                Role::Replica {
                    master,
                    state: LinkState::Connected,
                },
            ) if from == master => {
                if offset != self.repl.offset {
                    // A lost message: the connection is as good as broken. Resync.
                    let have = self.repl.offset;
                    self.note(format!(
                        "stream gap (expected offset {have}, got {offset}): resync"
                    ));
                    self.start_replication(master);
                    return;
                }
                self.apply_from_master(now_ms, &cmds);
                self.repl.offset += cmds.iter().map(resp_len).sum::<u64>();
            }
            (
                ReplMsg::GetAck,
                Role::Replica {
                    master,
                    state: LinkState::Connected,
                },
            ) if from == master => {
                let offset = self.repl.offset;
                self.repl
                    .outbox
                    .push((master, Msg::Repl(ReplMsg::Ack { offset })));
            }
            // Anything else is stale traffic of a link that no longer exists.
            _ => {}
        }
    }

    fn full_sync_to(&mut self, replica: ProcId) {
        self.repl.backlog = true;
        let cmds = self.snapshot_cmds();
        let offset = self.repl.offset;
        let now = self.repl.mono_ns;
        self.repl.replicas.retain(|r| r.proc != replica);
        self.repl.replicas.push(ReplicaLink {
            proc: replica,
            ack_offset: 0,
            last_ack_mono_ns: now,
            online: false,
        });
        let name = String::from_utf8_lossy(&self.peer_name(replica)).into_owned();
        self.note(format!(
            "full sync to replica {name}: {} keys at offset {offset}",
            cmds.len()
        ));
        self.repl
            .outbox
            .push((replica, Msg::Repl(ReplMsg::FullSync { offset, cmds })));
    }

    /// Once a second: replicas ack (or retry their sync), masters drop silent replicas.
    pub(crate) fn replication_cron(&mut self, now_mono_ns: u64) {
        if now_mono_ns.saturating_sub(self.repl.last_ack_sent_mono_ns) < ACK_PERIOD_NS {
            return;
        }
        self.repl.last_ack_sent_mono_ns = now_mono_ns;
        match self.role {
            Role::Replica {
                master,
                state: LinkState::Connected,
            } => {
                let offset = self.repl.offset;
                self.repl
                    .outbox
                    .push((master, Msg::Repl(ReplMsg::Ack { offset })));
            }
            Role::Replica {
                master,
                state: LinkState::Connecting,
            } => {
                self.repl.outbox.push((master, Msg::Repl(ReplMsg::Sync)));
            }
            Role::Master => {
                let before = self.repl.replicas.len();
                self.repl
                    .replicas
                    .retain(|r| now_mono_ns.saturating_sub(r.last_ack_mono_ns) <= REPL_TIMEOUT_NS);
                if self.repl.replicas.len() < before {
                    self.note("a replica timed out (no ack for 60s): dropped".into());
                }
            }
        }
    }

    /// Snapshots and fsyncs on their schedule.
    pub(crate) fn persistence_cron(&mut self, now_mono_ns: u64) {
        let period = match self.config.persistence {
            Persistence::None | Persistence::Aof(Fsync::Always) => return,
            Persistence::Rdb { every_ns } => every_ns,
            Persistence::Aof(Fsync::EverySec) => NS_PER_S,
            Persistence::Aof(Fsync::No) => OS_FLUSH_PERIOD_NS,
        };
        if now_mono_ns.saturating_sub(self.disk.snapshot_at_mono_ns) >= period {
            self.save_to_disk();
            self.disk.snapshot_at_mono_ns = now_mono_ns;
        }
    }

    /// Executes a command from the master's stream: no READONLY, no NOREPLICAS.
    fn execute_unchecked(&mut self, now_ms: i64, cmd: &Command) -> Reply {
        self.exec_for_replication(now_ms, cmd, Caller { proc: None })
    }
}
