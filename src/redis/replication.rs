//! The state of a Redis node's asynchronous replication and persistence (Redis 7.0
//! semantics: the master replies before it replicates; AOF and RDB decide what a restart
//! keeps): roles, links, offsets, the disk. Plain data below the node: the node's behaviour
//! on it is `redis::node::replicate`.

use std::collections::BTreeMap;

use crate::proto::{Command, Msg};
use crate::redis::keyspace::Keyspace;
use crate::time::{NS_PER_S, ProcId};

/// Replicas ack their offset this often (replicationCron, once a second).
pub const ACK_PERIOD_NS: u64 = NS_PER_S;
/// A replica silent for longer than this is dropped by its master (`repl-timeout`).
pub const REPL_TIMEOUT_NS: u64 = 60 * NS_PER_S;
/// A replica waiting for its full sync asks again after this long (the request or the
/// transfer was lost, e.g. in a partition).
pub const SYNC_RETRY_NS: u64 = 5 * NS_PER_S;
/// `appendfsync no`: the OS writes dirty pages back about this often.
pub const OS_FLUSH_PERIOD_NS: u64 = 30 * NS_PER_S;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    /// Waiting for the master's full sync.
    Connecting,
    /// In sync, applying the stream.
    Connected,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Master,
    Replica { master: ProcId, state: LinkState },
}

/// A replica as its master sees it.
#[derive(Clone, Debug)]
pub struct ReplicaLink {
    pub proc: ProcId,
    pub ack_offset: u64,
    pub last_ack_mono_ns: u64,
    /// Redis's `SLAVE_STATE_ONLINE`: the first full sync is over. Until then the replica is
    /// counted by nothing that counts replicas — WAIT (`replicationCountAcksByOffset`,
    /// replication.c:3444-3457 in 7.0.15) and min-replicas-to-write's good replicas
    /// (`refreshGoodSlavesCount`, :3381-3398) skip it. With Redis 7.0's default diskless
    /// sync the master puts it online at the end of the transfer, which it finds out at the
    /// latest from the replica's first `REPLCONF ACK` (:1203-1204, `checkChildrenDone` →
    /// `updateSlavesWaitingBgsave` :1559, → `replicaPutOnline` :1613, :1269-1291); the
    /// replica sends that ack as soon as it has loaded the payload (:2240-2241). Here the
    /// transfer is one message, so that ack is when it goes online.
    pub online: bool,
}

#[derive(Clone, Debug, Default)]
pub struct ReplState {
    /// `master_repl_offset` on a master; the offset applied so far on a replica.
    pub offset: u64,
    /// On a master: attached replicas (at most one link per process).
    pub replicas: Vec<ReplicaLink>,
    /// Effects of the command being executed, with the db each ran in, streamed when it
    /// completes.
    pub pending: Vec<(u8, Command)>,
    /// On a master: the db the stream last SELECTed (Redis's `slaveseldb`); on a replica:
    /// the db the master's stream is applying to. The model starts both at 0 where Redis
    /// forces a `SELECT 0` after a full sync (a few bytes of offset the model does not count).
    pub stream_db: u8,
    pub outbox: Vec<(ProcId, Msg)>,
    /// Each client's last write offset (what its WAIT waits for).
    pub woff: BTreeMap<ProcId, u64>,
    /// True while applying the master's stream: keys are seen as stored, expired or not.
    pub applying_master_stream: bool,
    /// The node's monotonic clock at the event being handled.
    pub mono_ns: u64,
    pub last_ack_sent_mono_ns: u64,
    /// When this replica last asked for a full sync.
    pub sync_requested_mono_ns: u64,
    /// A replication backlog exists (a replica attached once): from then on writes are
    /// recorded and the offset advances, as in Redis; before, a master keeps offset 0 and
    /// the hot path copies nothing.
    pub backlog: bool,
    /// A write happened since the last `flush_propagation` (for `appendfsync always`).
    pub dirty: bool,
}

impl ReplState {
    pub fn client_woff(&self, client: ProcId) -> u64 {
        self.woff.get(&client).copied().unwrap_or(0)
    }
    /// Links and transient state do not survive a restart; the role does (redis.conf).
    pub fn restart(&mut self) {
        self.replicas.clear();
        self.pending.clear();
        self.outbox.clear();
        self.woff.clear();
        self.applying_master_stream = false;
        self.stream_db = 0;
    }
}

/// What is on disk.
#[derive(Clone, Debug, Default)]
pub struct Disk {
    /// The last RDB snapshot, or the dataset as of the last AOF fsync (db 0).
    pub snapshot: Keyspace,
    /// The same for dbs 1..16 (empty when no connection ever selected one).
    pub snapshot_other_dbs: Vec<Keyspace>,
    /// The function libraries of the snapshot.
    pub snapshot_functions: crate::redis::functions::FunctionStore,
    pub snapshot_at_mono_ns: u64,
    /// Set by a restart, cleared when loading finishes in `on_start`.
    pub loading: bool,
}

/// Bytes of the RESP encoding of a command: what replication offsets count.
pub fn resp_len(cmd: &Command) -> u64 {
    let argv = cmd.to_argv();
    let digits = |n: usize| n.to_string().len() as u64;
    let mut n = 1 + digits(argv.len()) + 2;
    for a in &argv {
        n += 1 + digits(a.len()) + 2 + a.len() as u64 + 2;
    }
    n
}
