//! A client's connection to a node: its selected database (SELECT, 16 databases) and its
//! transaction (MULTI/EXEC/DISCARD, WATCH/UNWATCH), with Redis 7.0.15's replies and rules.
//!
//! A connection is a client process's link to a node (the corpus runner is one connection).
//! The node keeps state only for connections that left the default (db 0, no MULTI, no
//! WATCH), so a model that never sends these commands runs exactly as before.
//!
//! The databases: the node's `keyspace` field is the database being executed in. Outside a
//! command it is always db 0 (so checkers, persistence and tests that read `keyspace` see the
//! one every lock model uses); a command of a connection that selected db `d` swaps db `d`
//! in for its run and back afterwards (two `mem::swap`s, no copy).

use crate::proto::command::ParseError;
use crate::proto::{Bytes, Command, Reply};
use crate::redis::keyspace::Keyspace;
use crate::redis::node::{Caller, NOREPLICAS, READONLY, RedisNode};
use crate::time::ProcId;

/// `databases 16` (redis.conf default).
pub const DATABASES: usize = 16;
/// Most commands one MULTI may queue. Redis bounds a queue only by client memory; the model
/// bounds it so that a runaway input cannot grow a node without limit.
pub const MULTI_QUEUE_CAP: usize = 10_000;
/// Most keys one connection may WATCH at once (same reason).
pub const WATCHED_KEYS_CAP: usize = 10_000;

pub const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// Which connection: the client process (`None`: the corpus runner or the node itself).
pub type ConnId = Option<ProcId>;

/// A WATCHed key (Redis 7.0 `watchedKey`).
#[derive(Clone, Debug)]
pub(crate) struct Watched {
    pub db: u8,
    pub key: Bytes,
    /// The key was already logically expired when WATCHed. Redis 7.0 then treats its
    /// deletion (lazy or active expiry, FLUSHALL) as no change, and EXEC does not abort for
    /// its being expired; a write that leaves the key present still aborts.
    pub expired: bool,
}

/// A queued command, or an error Redis reports only when EXEC runs it (a syntax error found
/// by the command itself, which the model's parser finds earlier).
#[derive(Clone, Debug)]
pub(crate) enum Queued {
    Cmd(Command),
    Failed(Reply),
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Conn {
    // Invariant: < DATABASES.
    pub db: u8,
    /// `Some` between MULTI and EXEC/DISCARD.
    // Invariant: at most MULTI_QUEUE_CAP entries.
    pub queue: Option<Vec<Queued>>,
    /// A queue-time error happened (CLIENT_DIRTY_EXEC): EXEC answers EXECABORT.
    pub dirty_exec: bool,
    // Invariant: at most WATCHED_KEYS_CAP entries, no (db, key) twice.
    pub watches: Vec<Watched>,
    /// A watched key was touched (CLIENT_DIRTY_CAS): EXEC answers a nil array.
    pub dirty_cas: bool,
    /// CLIENT ID's answer, once asked (handshake.rs).
    pub id: Option<u64>,
    /// CLIENT SETNAME's name.
    pub name: Option<Bytes>,
}

impl Conn {
    fn is_default(&self) -> bool {
        self.db == 0
            && self.queue.is_none()
            && self.watches.is_empty()
            && self.id.is_none()
            && self.name.is_none()
    }
}

/// Commands that act on the connection rather than on the keyspace.
pub(crate) fn is_connection_command(cmd: &Command) -> bool {
    matches!(
        cmd,
        Command::Select(_)
            | Command::Multi
            | Command::Exec
            | Command::Discard
            | Command::Watch(_)
            | Command::Unwatch
            | Command::Hello(_)
            | Command::Client(_)
    )
}

/// The keys an effect modifies (what `signalModifiedKey` names), for WATCH.
fn effect_keys(cmd: &Command) -> &[Bytes] {
    match cmd {
        Command::Set { key, .. }
        | Command::Expire { key, .. }
        | Command::SetNx(key, _)
        | Command::Persist(key)
        | Command::IncrBy(key, _)
        | Command::DecrBy(key, _)
        | Command::HSet(key, _)
        | Command::HIncrBy(key, _, _)
        | Command::HDel(key, _)
        | Command::RPush(key, _)
        | Command::Append(key, _)
        | Command::SetRange(key, _, _)
        | Command::HSetNx(key, _, _)
        | Command::HMSet(key, _)
        | Command::LPush(key, _)
        | Command::LPop(key, _) => std::slice::from_ref(key),
        Command::Del(keys) => keys,
        Command::Rename { keys, .. } => keys,
        // COPY's destination may be in another db: `copy` touches it there itself.
        _ => &[],
    }
}

impl RedisNode {
    /// The selected database of a connection (0 for one the node keeps no state for).
    pub fn selected_db(&self, conn: ConnId) -> u8 {
        self.conns.get(&conn).map_or(0, |c| c.db)
    }

    /// Makes db `d` the one `keyspace` holds. See the module comment.
    pub(crate) fn switch_db(&mut self, d: u8) {
        if d == self.cur_db {
            return;
        }
        if self.other_dbs.is_empty() {
            self.other_dbs = vec![Keyspace::new(); DATABASES];
        }
        let cur = usize::from(self.cur_db);
        std::mem::swap(&mut self.keyspace, &mut self.other_dbs[cur]);
        std::mem::swap(&mut self.keyspace, &mut self.other_dbs[usize::from(d)]);
        self.cur_db = d;
    }

    /// The databases that hold keys (db 0 always), for the cron, loading and full sync.
    pub(crate) fn used_dbs(&self) -> Vec<u8> {
        debug_assert_eq!(self.cur_db, 0, "between commands db 0 is selected");
        let mut v = vec![0];
        for (i, ks) in self.other_dbs.iter().enumerate().skip(1) {
            if !ks.is_empty() {
                v.push(i as u8);
            }
        }
        v
    }

    /// Database `d` as stored, whichever is selected now (`None`: never used).
    pub(crate) fn db_ref(&self, d: u8) -> Option<&Keyspace> {
        if d == self.cur_db {
            Some(&self.keyspace)
        } else {
            self.other_dbs.get(usize::from(d))
        }
    }

    /// An effect just changed the current db: mark the connections watching its keys.
    pub(crate) fn touch_effect(&mut self, cmd: &Command) {
        for key in effect_keys(cmd) {
            self.touch_key(key);
        }
    }

    /// Redis 7.0's `touchWatchedKey`, called after the change: a watch of a key that was
    /// already expired when watched is cleared (not dirtied) when the key is now gone.
    pub(crate) fn touch_key(&mut self, key: &[u8]) {
        if self.conns.is_empty() {
            return;
        }
        let db = self.cur_db;
        let present = self.keyspace.raw(key).is_some();
        for conn in self.conns.values_mut() {
            if conn.dirty_cas {
                continue;
            }
            if let Some(w) = conn
                .watches
                .iter_mut()
                .find(|w| w.db == db && w.key[..] == *key)
            {
                if w.expired && !present {
                    w.expired = false;
                    continue;
                }
                conn.dirty_cas = true;
            }
        }
    }

    /// A database is about to be emptied (FLUSHALL: `None`, FLUSHDB, a replica's full
    /// sync): Redis 7.0's `touchAllWatchedKeysInDb` marks the watches of keys it holds,
    /// except those already expired when watched (they are only cleared).
    pub(crate) fn touch_flushed(&mut self, only: Option<u8>) {
        if self.conns.is_empty() {
            return;
        }
        let mut hits: Vec<(ConnId, usize)> = Vec::new();
        for (id, conn) in &self.conns {
            if conn.dirty_cas {
                continue;
            }
            for (i, w) in conn.watches.iter().enumerate() {
                if only.is_none_or(|d| d == w.db)
                    && self.db_ref(w.db).is_some_and(|ks| ks.raw(&w.key).is_some())
                {
                    hits.push((*id, i));
                }
            }
        }
        for (id, i) in hits {
            let Some(conn) = self.conns.get_mut(&id) else {
                continue;
            };
            if conn.watches[i].expired {
                conn.watches[i].expired = false;
            } else {
                conn.dirty_cas = true;
            }
        }
    }

    /// SWAPDB is about to give db `emptied` the keys of db `replaced_with`: Redis 7.0's
    /// `touchAllWatchedKeysInDb(emptied, replaced_with)` for the watches of keys in
    /// `emptied`. A watch of a key in neither db is left alone; one of a key already
    /// expired when watched is only cleared if the key is not in `replaced_with`, and kept
    /// if it is expired there too; a key missing from `emptied` replaced by an expired one
    /// becomes such a watch; any other is touched.
    pub(crate) fn touch_swapped(&mut self, emptied: u8, replaced_with: u8, now: i64) {
        if self.conns.is_empty() {
            return;
        }
        let state = |node: &RedisNode, db: u8, key: &Bytes| {
            node.db_ref(db)
                .and_then(|ks| ks.raw(key))
                .map(|e| e.is_expired(now))
        };
        let mut changes: Vec<(ConnId, usize, SwapTouch)> = Vec::new();
        for (id, conn) in &self.conns {
            if conn.dirty_cas {
                continue;
            }
            for (i, w) in conn.watches.iter().enumerate() {
                if w.db != emptied {
                    continue;
                }
                let here = state(self, emptied, &w.key);
                let there = state(self, replaced_with, &w.key);
                let touch = match (here, there, w.expired) {
                    (None, None, _) => continue,
                    (_, None, true) => SwapTouch::Cleared,
                    (_, Some(true), true) => continue,
                    (None, Some(true), false) => SwapTouch::NowExpired,
                    _ => SwapTouch::Dirty,
                };
                changes.push((*id, i, touch));
            }
        }
        for (id, i, touch) in changes {
            let Some(conn) = self.conns.get_mut(&id) else {
                continue;
            };
            match touch {
                SwapTouch::Cleared => conn.watches[i].expired = false,
                SwapTouch::NowExpired => conn.watches[i].expired = true,
                SwapTouch::Dirty => conn.dirty_cas = true,
            }
        }
    }

    /// A command from a connection that has state, or that changes it. Returns the reply.
    pub(crate) fn execute_conn(&mut self, now: i64, cmd: &Command, caller: Caller) -> Reply {
        let id = caller.proc;
        let mut conn = self.conns.remove(&id).unwrap_or_default();
        let reply = if conn.queue.is_some() {
            self.in_multi(now, cmd, caller, &mut conn)
        } else {
            match cmd {
                Command::Multi => {
                    conn.queue = Some(Vec::new());
                    conn.dirty_exec = false;
                    Reply::Ok
                }
                Command::Exec => Reply::err("ERR EXEC without MULTI"),
                Command::Discard => Reply::err("ERR DISCARD without MULTI"),
                Command::Watch(keys) => self.watch(now, &mut conn, keys),
                Command::Unwatch => {
                    conn.watches.clear();
                    conn.dirty_cas = false;
                    Reply::Ok
                }
                Command::Select(d) => match u8::try_from(*d) {
                    Ok(d) if usize::from(d) < DATABASES => {
                        conn.db = d;
                        Reply::Ok
                    }
                    _ => Reply::err("ERR DB index is out of range"),
                },
                Command::Hello(args) => self.hello(args, &mut conn),
                Command::Client(c) => self.client(c, &mut conn),
                _ => {
                    // The connection's watches must be visible to touches while it runs.
                    let db = conn.db;
                    self.conns.insert(id, conn);
                    self.switch_db(db);
                    let reply = self.execute_plain(now, cmd, caller);
                    self.switch_db(0);
                    conn = self.conns.remove(&id).unwrap_or_default();
                    reply
                }
            }
        };
        if !conn.is_default() {
            self.conns.insert(id, conn);
        }
        reply
    }

    /// A parse error from a connection: inside MULTI an unknown command or a wrong arity is
    /// a queue-time error (the transaction will answer EXECABORT); other errors are the
    /// command's own and Redis reports them when EXEC runs it.
    pub fn reject(&mut self, caller: Caller, err: &ParseError) -> Reply {
        let reply = err.client_reply();
        // processCommand's rejection of EXEC itself, in a MULTI or not, discards the
        // transaction and the watches (execCommandAbort), naming the reason without `ERR `.
        if matches!(err, ParseError::Arity("exec")) {
            return self.abort_exec(caller.proc, &reply);
        }
        let Some(conn) = self.conns.get_mut(&caller.proc) else {
            return reply;
        };
        let Some(queue) = conn.queue.as_mut() else {
            return reply;
        };

        let queue_time = match err {
            ParseError::Unknown { .. } | ParseError::UnknownSubcommand(_) => true,
            // PING checks its own argument count when it runs.
            ParseError::Arity(name) => *name != "ping",
            ParseError::Reply(_) => false,
        };
        if queue_time {
            conn.dirty_exec = true;
            return reply;
        }
        if queue.len() >= MULTI_QUEUE_CAP {
            conn.dirty_exec = true;
            return queue_full();
        }
        queue.push(Queued::Failed(reply));
        Reply::Status("QUEUED".into())
    }

    /// processCommand's rejection of EXEC itself (its arity, or a subscribed connection),
    /// in a MULTI or not: `execCommandAbort` discards the transaction and the watches and
    /// names the reason without its `ERR `.
    pub(crate) fn abort_exec(&mut self, id: ConnId, why: &Reply) -> Reply {
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.queue = None;
            conn.dirty_exec = false;
            conn.watches.clear();
            conn.dirty_cas = false;
            if conn.is_default() {
                self.conns.remove(&id);
            }
        }
        let text = match why {
            Reply::Error(e) => e.strip_prefix("ERR ").unwrap_or(e).to_string(),
            _ => String::new(),
        };
        Reply::Error(format!(
            "EXECABORT Transaction discarded because of: {text}"
        ))
    }

    fn in_multi(&mut self, now: i64, cmd: &Command, caller: Caller, conn: &mut Conn) -> Reply {
        match cmd {
            Command::Exec => self.exec_transaction(now, caller, conn),
            Command::Discard => {
                conn.queue = None;
                conn.dirty_exec = false;
                conn.watches.clear();
                conn.dirty_cas = false;
                Reply::Ok
            }
            Command::Multi => Reply::err("ERR MULTI calls can not be nested"),
            Command::Watch(_) => Reply::err("ERR WATCH inside MULTI is not allowed"),
            _ => {
                // processCommand's refusals come before queueing, and flag the transaction.
                if self.writes(cmd) {
                    if self.is_replica() {
                        conn.dirty_exec = true;
                        return Reply::err(READONLY);
                    }
                    if !self.enough_good_replicas() {
                        conn.dirty_exec = true;
                        return Reply::err(NOREPLICAS);
                    }
                }
                let queue = conn.queue.as_mut().expect("in MULTI");
                if queue.len() >= MULTI_QUEUE_CAP {
                    conn.dirty_exec = true;
                    return queue_full();
                }
                queue.push(Queued::Cmd(cmd.clone()));
                Reply::Status("QUEUED".into())
            }
        }
    }

    fn watch(&mut self, now: i64, conn: &mut Conn, keys: &[Bytes]) -> Reply {
        for key in keys {
            if conn
                .watches
                .iter()
                .any(|w| w.db == conn.db && w.key == *key)
            {
                continue;
            }
            if conn.watches.len() >= WATCHED_KEYS_CAP {
                return Reply::Error(format!(
                    "ERR the model watches at most {WATCHED_KEYS_CAP} keys per connection"
                ));
            }
            let expired = self
                .db_ref(conn.db)
                .and_then(|ks| ks.raw(key))
                .is_some_and(|e| e.is_expired(now));
            conn.watches.push(Watched {
                db: conn.db,
                key: key.clone(),
                expired,
            });
        }
        Reply::Ok
    }

    /// EXEC: EXECABORT after a queue-time error, a nil array when a watched key was touched
    /// (or, watched while live, has expired since), else every queued command's reply. The
    /// effects go to replicas as one unit (wrapped in MULTI/EXEC when more than one).
    fn exec_transaction(&mut self, now: i64, caller: Caller, conn: &mut Conn) -> Reply {
        let queue = conn.queue.take().unwrap_or_default();
        // processCommand counts EXEC as a write when a write is queued: a node that became
        // a replica (or lost its good replicas) since MULTI refuses the whole transaction,
        // before the other checks (rejectCommand -> execCommandAbort).
        if queue
            .iter()
            .any(|q| matches!(q, Queued::Cmd(c) if self.writes(c)))
        {
            let refusal = if self.is_replica() {
                Some(READONLY)
            } else if !self.enough_good_replicas() {
                Some(NOREPLICAS)
            } else {
                None
            };
            if let Some(why) = refusal {
                conn.dirty_exec = false;
                conn.watches.clear();
                conn.dirty_cas = false;
                return Reply::Error(format!("EXECABORT Transaction discarded because of: {why}"));
            }
        }
        let aborted = std::mem::take(&mut conn.dirty_exec);
        // isWatchedKeyExpired: only keys that were live when watched.
        let expired = conn.watches.iter().any(|w| {
            !w.expired
                && self
                    .db_ref(w.db)
                    .and_then(|ks| ks.raw(&w.key))
                    .is_some_and(|e| e.is_expired(now))
        });
        let cas = std::mem::take(&mut conn.dirty_cas) || expired;
        conn.watches.clear();
        if aborted {
            return Reply::err(EXECABORT);
        }
        if cas {
            return Reply::Nil;
        }
        let mut replies = Vec::with_capacity(queue.len());
        for q in queue {
            let reply = match q {
                Queued::Failed(r) => r,
                Queued::Cmd(Command::Select(d)) => match u8::try_from(d) {
                    Ok(d) if usize::from(d) < DATABASES => {
                        conn.db = d;
                        Reply::Ok
                    }
                    _ => Reply::err("ERR DB index is out of range"),
                },
                Queued::Cmd(Command::Hello(args)) => self.hello(&args, conn),
                Queued::Cmd(Command::Client(c)) => self.client(&c, conn),
                Queued::Cmd(cmd) => {
                    self.switch_db(conn.db);
                    let r = self.exec_in_transaction(now, &cmd, caller);
                    self.switch_db(0);
                    r
                }
            };
            replies.push(reply);
        }
        self.flush_effects(caller.proc, true);
        self.serve_ready(now);
        Reply::Array(replies)
    }
}

/// What SWAPDB does to one watch.
#[derive(Clone, Copy, Debug)]
enum SwapTouch {
    Cleared,
    NowExpired,
    Dirty,
}

fn queue_full() -> Reply {
    Reply::Error(format!(
        "ERR the model queues at most {MULTI_QUEUE_CAP} commands in one MULTI"
    ))
}
