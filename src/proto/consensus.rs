//! Messages of the consensus lock service (a ZooKeeper-style lock, for contrast with Redis
//! locks). Defined by the consensus module's author; see src/client/consensus.rs.
//!
//! The shape follows the ZooKeeper lock recipe: a client opens a session, creates an
//! ephemeral sequential node under the lock, and holds the lock while its node is the lowest.
//! Requests carry the client's `id`, echoed in the response; `session` names the session the
//! request belongs to (every request from a live session also counts as a heartbeat).
//!
//! | request | response |
//! |---|---|
//! | `Connect` | `Connected` (or `Refused`: too many sessions) |
//! | `Heartbeat` | none (`SessionExpired` if the session is gone) |
//! | `CreateLockNode` | `Created` (or `Refused`: too many nodes) |
//! | `Watch` | `Holder` now, `Changed` later (once) when the lowest node changes |
//! | `DeleteNode` | `Deleted` (or `Refused`: the node belongs to another session) |
//!
//! Any request naming a session the service does not know (expired, or never opened) is
//! answered with `SessionExpired`; the service also sends it unprompted when it expires one.

impl ConsensusMsg {
    /// The id of a request the service answers (what a killed service's host refuses);
    /// None for answers, heartbeats and notifications.
    pub fn request_id(&self) -> Option<u64> {
        match self {
            ConsensusMsg::Connect { id, .. }
            | ConsensusMsg::CreateLockNode { id, .. }
            | ConsensusMsg::Watch { id, .. }
            | ConsensusMsg::DeleteNode { id, .. } => Some(*id),
            _ => None,
        }
    }
}

/// Traffic between consensus-lock clients and the lock service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsensusMsg {
    /// Open a session; the service clamps the timeout into its bounds (as ZooKeeper clamps
    /// into `[2, 20]` ticks).
    Connect {
        id: u64,
        session_timeout_ms: u64,
    },
    /// The session is open; `timeout_ms` is the negotiated timeout (heartbeat within it).
    Connected {
        id: u64,
        session: u64,
        timeout_ms: u64,
    },
    /// Keeps the session alive; no answer.
    Heartbeat {
        session: u64,
    },
    /// Create an ephemeral sequential node under `lock`, owned by `session`.
    CreateLockNode {
        id: u64,
        session: u64,
        lock: u32,
    },
    /// The node was created: its sequence number under the lock, and `zxid`, the service's
    /// transaction number of the creation (ZooKeeper's czxid): it never repeats.
    Created {
        id: u64,
        seq: u64,
        zxid: u64,
    },
    /// Which node of `lock` is the lowest? If it is not `seq`, also watch it (one-shot).
    Watch {
        id: u64,
        session: u64,
        lock: u32,
        seq: u64,
    },
    /// The lowest node of the lock (None: no node), and its creation zxid.
    Holder {
        id: u64,
        holder_seq: Option<u64>,
        holder_zxid: Option<u64>,
    },
    /// A watch fired: the lowest node of `lock` changed. One-shot, as ZooKeeper watches are:
    /// ask again with `Watch` to learn the new holder and re-arm.
    Changed {
        lock: u32,
    },
    /// Delete node `seq` of `lock` (release). Deleting a node that is already gone succeeds.
    DeleteNode {
        id: u64,
        session: u64,
        lock: u32,
        seq: u64,
    },
    Deleted {
        id: u64,
    },
    /// The request could not be served (a limit, or a node of another session).
    Refused {
        id: u64,
    },
    /// The service expired `session` (no heartbeat within its timeout) and deleted its
    /// ephemeral nodes; or a request named a session it does not know.
    SessionExpired {
        session: u64,
    },
}
