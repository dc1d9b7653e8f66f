//! Clients blocked in BLPOP, as plain data below the node (what Redis keeps in
//! `db->blocking_keys`, `server.ready_keys` and its timeout table): the node's behaviour on
//! it is `redis::node::blocking`.

use crate::proto::{Bytes, Reply};
use crate::time::ProcId;

/// Most clients one node keeps blocked: Redis bounds them only by its client limit
/// (`maxclients`, 10,000 by default); the model refuses past it rather than grow.
pub const BLOCKED_CLIENTS_CAP: usize = 10_000;

/// A client parked in BLPOP.
#[derive(Clone, Debug)]
pub(crate) struct Blocked {
    /// The connection (`None`: the corpus runner's own).
    pub conn: Option<ProcId>,
    /// The request it is answered under.
    pub id: u64,
    pub db: u8,
    // Invariant: no key twice (Redis registers a repeated key once).
    pub keys: Vec<Bytes>,
    /// Node wall ms after which it times out; `None`: never.
    pub deadline_ms: Option<i64>,
}

/// What a BLPOP that must block leaves for its caller to park.
#[derive(Clone, Debug)]
pub(crate) struct Park {
    pub db: u8,
    pub keys: Vec<Bytes>,
    pub deadline_ms: Option<i64>,
}

/// The node's blocked clients.
#[derive(Clone, Debug, Default)]
pub(crate) struct Blocking {
    // Invariant: in the order the clients blocked (each key's clients are served in it).
    pub clients: Vec<Blocked>,
    /// Keys made ready since the last serve, in the order they were (Redis's `ready_keys`).
    // Invariant: no (db, key) twice, each named by a client in `clients`.
    pub ready: Vec<(u8, Bytes)>,
    // Invariant: `None` between requests (set by a BLPOP that must block, taken at once by
    // whoever ran it: `RedisNode::park`).
    pub parking: Option<Park>,
    /// Replies to the corpus runner's own connection (`None`), which has no process to be
    /// sent to.
    pub runner_replies: Vec<(u64, Reply)>,
}

impl Blocking {
    pub(crate) fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }
    /// A blocked client has a deadline: the cron must tick to time it out.
    pub(crate) fn has_deadline(&self) -> bool {
        self.clients.iter().any(|c| c.deadline_ms.is_some())
    }
}
