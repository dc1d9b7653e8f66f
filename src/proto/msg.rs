//! Messages the event loop carries between processes.

use crate::proto::consensus::ConsensusMsg;
use crate::proto::sentinel::{ReplMsg, SentinelRequest, SentinelResponse};
use crate::proto::{Command, Reply};

/// A message on the simulated network. Closed on purpose: every kind of traffic the model
/// knows is listed here, so traces and fault filters can match on it exhaustively.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    /// A command to a Redis node; `id` is the sender's, echoed in the reply.
    Request { id: u64, cmd: Command },
    /// A Redis node's reply to request `id`.
    Reply { id: u64, reply: Reply },
    /// To the protected resource: begin a critical section by reading its version.
    ResourceRead { id: u64, token: Option<u64> },
    /// To the protected resource: write `base_version + 1`, the update of a critical section
    /// that read `base_version`.
    ResourceWrite {
        id: u64,
        token: Option<u64>,
        base_version: u64,
    },
    /// The resource's answer to a read or write: the version it holds now, and whether it
    /// accepted the operation (a fencing resource rejects stale tokens).
    ResourceAck {
        id: u64,
        accepted: bool,
        version: u64,
    },
    /// To a sentinel, from a sentinel or a client.
    SentinelReq { id: u64, req: SentinelRequest },
    /// A sentinel's answer to request `id`.
    SentinelResp { id: u64, resp: SentinelResponse },
    /// Replication between a master and a replica.
    Repl(ReplMsg),
    /// Consensus lock service traffic (ZooKeeper-style lock).
    Consensus(ConsensusMsg),
    /// A Redis node's push to a subscriber's pub/sub connection: `["message", channel,
    /// payload]`, `["pmessage", pattern, channel, payload]`, or a further confirmation of a
    /// multi-channel (P)(UN)SUBSCRIBE. Not tied to a request.
    Push { reply: Reply },
    /// Made by the loop, not by a process: request `id` (a `Request` or `SentinelReq`)
    /// reached a process that had crashed on a host that stayed up, whose kernel refused the
    /// connection (a TCP RST). It comes back from that process one link latency later — the
    /// "connection refused" a real client gets in well under a millisecond, instead of
    /// silence until its timeout. With `id` 0 it is the reset of every connection to a
    /// server killed so, sent to its sentinels and clients at the kill: what they had in
    /// flight on it has failed.
    Refused { id: u64 },
}

impl Msg {
    /// The id of a request a server answers over a connection (a Redis command, a question
    /// to a sentinel, a request to the consensus service): what a crashed process's host
    /// refuses. Replies, replication, heartbeats and the other traffic are not requests a
    /// refusal could answer.
    pub fn refusable_id(&self) -> Option<u64> {
        match self {
            Msg::Request { id, .. } | Msg::SentinelReq { id, .. } => Some(*id),
            Msg::Consensus(c) => c.request_id(),
            _ => None,
        }
    }

    /// Short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "request",
            Msg::Reply { .. } => "reply",
            Msg::ResourceRead { .. } => "resource-read",
            Msg::ResourceWrite { .. } => "resource-write",
            Msg::ResourceAck { .. } => "resource-ack",
            Msg::SentinelReq { .. } => "sentinel-request",
            Msg::SentinelResp { .. } => "sentinel-response",
            Msg::Repl(_) => "replication",
            Msg::Consensus(_) => "consensus",
            Msg::Push { .. } => "push",
            Msg::Refused { .. } => "refused",
        }
    }
}
