//! BLPOP: a client parked at the node until a list it names gets an element, its timeout
//! passes, or the node stops being a master, as Redis 7.0.15's `blocked.c`, `timeout.c` and
//! `t_list.c` have it (checked against redis-server 7.0.15, tests/conformance/recorded/
//! lists-blocking.txt):
//!
//! - the timeout (seconds, a long double: `(long long) ceill(t * 1000)`) is read first, then
//!   the keys in order: a missing key is skipped, another type is WRONGTYPE, the first list
//!   is popped at once (`[key, element]`, propagated as `LPOP key`);
//! - with nothing to pop the client blocks, unless it may not (inside MULTI: a nil array;
//!   scripts may not call BLPOP at all), on each key once, at the end of each key's queue;
//! - a list *added* to the db at such a key (a push to a missing key, RENAME, COPY) makes it
//!   ready; after the command, transaction or script that added it, the key's clients are
//!   served first-blocked first while it has elements, each one's pop propagated as `LPOP
//!   key` after the writer's effects (a push and a pop in one transaction serve nobody);
//! - the deadline is on the node's wall clock (`mstime() + ms`; none for 0, or when that
//!   sum overflows) and passes when `now > deadline`, seen after any event at the node (the
//!   model's stand-in for `beforeSleep`): the cron tick or a request handled, as Redis
//!   wakes for its cron or a client;
//! - `REPLICAOF host port` (a master turning replica) answers every blocked client, WAIT's
//!   too, `-UNBLOCKED force unblock ...` and closes its connection (`disconnectAllBlockedClients`);
//! - a restart loses them with their connections.
//!
//! A blocked request parks only itself: other requests of the same client process run at
//! once, as they would on the other connections of its library's pool.

use crate::proto::{Bytes, Command, Msg, Reply};
use crate::redis::blocked::{BLOCKED_CLIENTS_CAP, Blocked, Park};
use crate::redis::keyspace::{Entry, Value};
use crate::redis::long_double::LongDouble;
use crate::redis::node::connection::ConnId;
use crate::redis::node::{RedisNode, WRONGTYPE};

/// `disconnectAllBlockedClients`'s error (the `-` is part of the text Redis passes).
pub const UNBLOCKED: &str =
    "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)";

/// BLPOP's timeout as `getTimeoutFromObjectOrReply` reads it in seconds: ms, or its error.
fn timeout_ms(raw: &[u8]) -> Result<i64, Reply> {
    let ms = LongDouble::parse(raw)
        .ok_or_else(|| Reply::err("ERR timeout is not a float or out of range"))?
        .ceil_thousandths();
    if ms < 0 {
        return Err(Reply::err("ERR timeout is negative"));
    }
    Ok(ms)
}

impl RedisNode {
    /// BLPOP (`blockingPopGenericCommand`). `may_block`: false inside a transaction, where
    /// an empty result is a nil array at once. A BLPOP that blocks answers nil here and
    /// leaves its parking for `park`.
    pub(super) fn blpop(
        &mut self,
        now: i64,
        keys: &[Bytes],
        timeout: &[u8],
        conn: ConnId,
        may_block: bool,
    ) -> Reply {
        let ms = match timeout_ms(timeout) {
            Ok(ms) => ms,
            Err(e) => return e,
        };
        for key in keys {
            let Some(i) = self.lookup_index(key, now) else {
                continue;
            };
            if !matches!(self.keyspace.at(i).value, Value::List(_)) {
                return Reply::err(WRONGTYPE);
            }
            return self.pop_for(now, key, conn);
        }
        if !may_block {
            return Reply::Nil;
        }
        if self.blocking.clients.len() >= BLOCKED_CLIENTS_CAP {
            return Reply::Error(format!(
                "ERR the model keeps at most {BLOCKED_CLIENTS_CAP} clients blocked per node"
            ));
        }
        let mut unique: Vec<Bytes> = Vec::with_capacity(keys.len());
        for k in keys {
            if !unique.contains(k) {
                unique.push(k.clone());
            }
        }
        self.blocking.parking = Some(Park {
            db: self.cur_db,
            keys: unique,
            deadline_ms: (ms > 0).then(|| now.checked_add(ms)).flatten(),
        });
        Reply::Nil
    }

    /// Pops the head of the list at `key` for a BLPOP: `[key, element]`, the pop propagated
    /// as `LPOP key` (the key goes with its last element).
    fn pop_for(&mut self, now: i64, key: &Bytes, conn: ConnId) -> Reply {
        let lpop = Command::LPop(key.clone(), Vec::new());
        match self.lpop(now, key, None, &lpop, conn) {
            Reply::Bulk(v) => Reply::Array(vec![Reply::Bulk(key.to_vec()), Reply::Bulk(v)]),
            other => other,
        }
    }

    /// Parks the command just executed for `conn`'s request `id` if it blocked (a BLPOP
    /// with nothing to pop); `false` if it did not (its reply stands).
    pub fn park(&mut self, conn: ConnId, id: u64) -> bool {
        let Some(p) = self.blocking.parking.take() else {
            return false;
        };
        self.blocking.clients.push(Blocked {
            conn,
            id,
            db: p.db,
            keys: p.keys,
            deadline_ms: p.deadline_ms,
        });
        true
    }

    /// A list was just added at `key` in the current db (`dbAdd`'s `signalKeyAsReady`).
    pub(super) fn signal_list_added(&mut self, key: &Bytes) {
        if self.blocking.clients.is_empty() {
            return;
        }
        let db = self.cur_db;
        let is_list = matches!(
            self.keyspace.raw(key),
            Some(Entry {
                value: Value::List(_),
                ..
            })
        );
        let waited = self
            .blocking
            .clients
            .iter()
            .any(|c| c.db == db && c.keys.contains(key));
        let queued = self
            .blocking
            .ready
            .iter()
            .any(|(d, k)| *d == db && k == key);
        if is_list && waited && !queued {
            self.blocking.ready.push((db, key.clone()));
        }
    }

    /// `handleClientsBlockedOnKeys`, after a command, transaction or script: each ready key's
    /// clients, first-blocked first, each get its head while it holds a list.
    #[inline]
    pub(super) fn serve_ready(&mut self, now: i64) {
        // A test on every top-level command (lock scripts included): the rest out of line.
        if !self.blocking.ready.is_empty() {
            self.serve_ready_keys(now);
        }
    }

    #[inline(never)]
    fn serve_ready_keys(&mut self, now: i64) {
        let here = self.cur_db;
        for (db, key) in std::mem::take(&mut self.blocking.ready) {
            self.switch_db(db);
            while let Some(pos) = self
                .blocking
                .clients
                .iter()
                .position(|c| c.db == db && c.keys.contains(&key))
            {
                let holds_list = self
                    .lookup_index(&key, now)
                    .is_some_and(|i| matches!(self.keyspace.at(i).value, Value::List(_)));
                if !holds_list {
                    break;
                }
                let client = self.blocking.clients.remove(pos);
                let reply = self.pop_for(now, &key, client.conn);
                self.flush_effects(client.conn, false);
                self.answer(client.conn, client.id, reply);
            }
        }
        self.switch_db(here);
    }

    /// What Redis's `beforeSleep` does after every event that the model needs: blocked
    /// clients whose deadline has passed (`now > deadline`) get a nil array, earliest
    /// deadline first. Called after each request and each cron tick.
    pub fn before_sleep(&mut self, now_ms: i64) {
        if self.blocking.clients.is_empty() {
            return;
        }
        let (mut due, kept): (Vec<Blocked>, Vec<Blocked>) =
            std::mem::take(&mut self.blocking.clients)
                .into_iter()
                .partition(|c| c.deadline_ms.is_some_and(|d| now_ms > d));
        self.blocking.clients = kept;
        if due.is_empty() {
            return;
        }
        self.wrote = true;
        due.sort_by_key(|c| c.deadline_ms);
        for c in due {
            self.answer(c.conn, c.id, Reply::Nil);
        }
        let clients = &self.blocking.clients;
        self.blocking
            .ready
            .retain(|(d, k)| clients.iter().any(|c| c.db == *d && c.keys.contains(k)));
    }

    /// `disconnectAllBlockedClients`, as `REPLICAOF host port` makes a master a replica:
    /// every blocked client (BLPOP and WAIT) gets [`UNBLOCKED`] and its connection closes.
    pub(super) fn unblock_for_role_change(&mut self) {
        for c in std::mem::take(&mut self.blocking.clients) {
            self.answer(c.conn, c.id, Reply::err(UNBLOCKED));
            self.conns.remove(&c.conn);
        }
        self.blocking.ready.clear();
        for w in std::mem::take(&mut self.waiters) {
            self.answer(Some(w.client), w.id, Reply::err(UNBLOCKED));
            self.conns.remove(&Some(w.client));
        }
    }

    /// The keys clients block on in db `db` (`scanDatabaseForReadyKeys` walks them after
    /// SWAPDB).
    pub(super) fn blocked_keys_of(&self, db: u8) -> Vec<Bytes> {
        let mut keys: Vec<Bytes> = Vec::new();
        for c in self.blocking.clients.iter().filter(|c| c.db == db) {
            for k in &c.keys {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
        keys
    }

    /// A crash loses the blocked clients with their connections.
    pub(super) fn forget_blocked(&mut self) {
        self.blocking.clients.clear();
        self.blocking.ready.clear();
        self.blocking.parking = None;
    }

    /// A late reply: to a client process over the network, or kept for the corpus runner.
    fn answer(&mut self, conn: ConnId, id: u64, reply: Reply) {
        match conn {
            Some(to) => self.repl.outbox.push((to, Msg::Reply { id, reply })),
            None => self.blocking.runner_replies.push((id, reply)),
        }
    }

    /// Late replies to the corpus runner's own connection, in the order they were made.
    pub fn take_runner_replies(&mut self) -> Vec<(u64, Reply)> {
        std::mem::take(&mut self.blocking.runner_replies)
    }
}
