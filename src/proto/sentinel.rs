//! Messages of Sentinel (between sentinels, and from clients to sentinels) and of Redis
//! replication (between a master and its replicas). Plain data.

use crate::proto::Command;
use crate::time::ProcId;

/// A request to a sentinel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SentinelRequest {
    /// `SENTINEL get-master-addr-by-name`: which node does this sentinel believe is master?
    GetMaster,
    /// `SENTINEL is-master-down-by-addr`: does the receiver also see `master` as down? With
    /// `vote_for: Some(candidate)` the sender also asks for the receiver's vote to lead the
    /// failover of `epoch` (a sentinel votes at most once per epoch).
    IsMasterDown {
        master: ProcId,
        epoch: u64,
        vote_for: Option<ProcId>,
    },
    /// Gossip ("hello" on the master's channel in real Redis): the sender's current view of
    /// the master and the configuration epoch it was set in. Higher epochs win.
    Hello { master: ProcId, config_epoch: u64 },
}

/// A sentinel's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SentinelResponse {
    /// The current master as this sentinel knows it (None: it knows no master).
    Master {
        master: Option<ProcId>,
        config_epoch: u64,
    },
    /// Answer to `IsMasterDown`: whether it sees the master down (SDOWN), and the leader it
    /// voted for in `leader_epoch` (if any).
    MasterDown {
        down: bool,
        leader: Option<ProcId>,
        leader_epoch: u64,
    },
}

/// Replication traffic between a master and a replica (over the simulated network, so
/// latency, loss and partitions apply).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplMsg {
    /// Replica → master: start (or restart) replication. Always answered by a full sync: the
    /// model has no partial resynchronisation.
    Sync,
    /// Master → replica: the whole dataset as commands that rebuild it (absolute expiries),
    /// and the replication offset it corresponds to. Replaces the replica's data.
    FullSync { offset: u64, cmds: Vec<Command> },
    /// Master → replica: commands propagated after a write, starting at stream `offset`
    /// (bytes of the RESP encoding, as Redis counts). A gap means a lost message: the
    /// replica asks for a full sync, as a broken connection would make it do.
    Stream { offset: u64, cmds: Vec<Command> },
    /// Replica → master: `REPLCONF ACK <offset>`.
    Ack { offset: u64 },
    /// Master → replica: `REPLCONF GETACK *` (sent when a client waits in WAIT).
    GetAck,
}
