//! The commands lock libraries and users' scripts send beyond the lock's own (issue 27):
//! STRLEN, APPEND, SETRANGE; RENAME, RENAMENX, COPY; OBJECT ENCODING; RANDOMKEY; LPUSH, LPOP,
//! LLEN (the hash commands are in hashes.rs). Each as Redis 7.0.15's `t_string.c`, `db.c`,
//! `object.c` and `t_list.c` run it: the order of its checks, its replies and error texts,
//! its effect for replicas (every one of these is propagated as itself, and only when it
//! changed something) and what it tells WATCH. A child of node: it only adds `impl` blocks to `RedisNode`.

use crate::history::Removal;
use crate::proto::{Bytes, Command, Reply};
use crate::redis::keyspace::{ELEMENT_OVERHEAD_BYTES, Entry, Keyspace, Sticky, Value};
use crate::redis::node::{MAX_USED_MEMORY_BYTES, RedisNode, WRONGTYPE};
use crate::time::ProcId;

/// `proto-max-bulk-len` (512 MiB): `checkStringLength`'s bound on APPEND and SETRANGE.
const PROTO_MAX_BULK_LEN: u64 = 512 << 20;
const ERR_STRING_TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
const ERR_NO_SUCH_KEY: &str = "ERR no such key";
const ERR_SAME_OBJECT: &str = "ERR source and destination objects are the same";
const ERR_NO_CLUSTER: &str = "ERR This instance has cluster support disabled";
const ERR_AUTH_NO_PASSWORD: &str = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?";
const ERR_WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

impl RedisNode {
    /// READONLY / READWRITE on a server without cluster support.
    pub(super) fn cluster_read_mode() -> Reply {
        Reply::err(ERR_NO_CLUSTER)
    }

    /// AUTH on a server with no password set (the model's only kind): the default user
    /// takes any password (`nopass`), the one-argument form is refused as Redis 7.0.15
    /// refuses it, other users do not exist.
    pub(super) fn auth(user: Option<&Bytes>) -> Reply {
        match user {
            None => Reply::err(ERR_AUTH_NO_PASSWORD),
            Some(u) if &u[..] == b"default" => Reply::Ok,
            Some(_) => Reply::err(ERR_WRONGPASS),
        }
    }

    pub(super) fn strlen(&mut self, now: i64, key: &[u8]) -> Reply {
        match self.lookup(key, now) {
            None => Reply::Int(0),
            Some(Entry {
                value: Value::Str(v),
                ..
            }) => Reply::Int(v.len() as i64),
            Some(_) => Reply::err(WRONGTYPE),
        }
    }

    /// APPEND: a new key is stored as SET would store it (`tryObjectEncoding`); an existing
    /// string is unshared first, so it is `raw` from then on, even when nothing is appended.
    pub(super) fn append(
        &mut self,
        now: i64,
        key: &Bytes,
        tail: &Bytes,
        cmd: &Command,
        by: Option<ProcId>,
    ) -> Reply {
        let len = match self.lookup_index(key, now) {
            None => {
                self.keyspace.insert(
                    key.clone(),
                    Entry {
                        value: Value::Str(tail.clone()),
                        expire_at_ms: None,
                    },
                );
                tail.len()
            }
            Some(i) => {
                let Value::Str(old) = &self.keyspace.at(i).value else {
                    return Reply::err(WRONGTYPE);
                };
                if old.len() as u64 + tail.len() as u64 > PROTO_MAX_BULK_LEN {
                    return Reply::err(ERR_STRING_TOO_LONG);
                }
                let mut grown = old.clone();
                grown.extend_from_slice(tail);
                let len = grown.len();
                *self.keyspace.value_at_mut(i) = Value::Str(grown);
                self.keyspace.resized(tail.len() as i64);
                self.keyspace.set_sticky(key, Some(Sticky::RawString));
                len
            }
        };
        self.note_written(key, by);
        self.propagate(|| cmd.clone());
        Reply::Int(len as i64)
    }

    /// SETRANGE (the offset was checked when parsed): nothing to write answers the length
    /// (0 and no key for a missing one); otherwise the string grows with zero bytes as
    /// needed and is `raw`. Past Redis's own bound the model adds its memory cap: a string
    /// that would take the node past `MAX_USED_MEMORY_BYTES` is refused (Redis checks
    /// maxmemory only before a command, and would allocate it).
    pub(super) fn setrange(
        &mut self,
        now: i64,
        key: &Bytes,
        offset: i64,
        patch: &Bytes,
        cmd: &Command,
        by: Option<ProcId>,
    ) -> Reply {
        let slot = self.lookup_index(key, now);
        let old_len = match slot {
            None => 0,
            Some(i) => match &self.keyspace.at(i).value {
                Value::Str(v) => v.len(),
                _ => return Reply::err(WRONGTYPE),
            },
        };
        if patch.is_empty() {
            return Reply::Int(old_len as i64);
        }
        let offset = offset as u64;
        if offset.saturating_add(patch.len() as u64) > PROTO_MAX_BULK_LEN {
            return Reply::err(ERR_STRING_TOO_LONG);
        }
        let end = offset as usize + patch.len();
        let new_len = end.max(old_len);
        let growth = (new_len - old_len) as u64;
        if growth > 0 && self.used_memory() + growth > MAX_USED_MEMORY_BYTES {
            self.memory_refusals += 1;
            return Reply::Error(format!(
                "ERR SETRANGE to {new_len} bytes would take the node past the model's memory cap ({MAX_USED_MEMORY_BYTES} bytes of keys and values)"
            ));
        }
        let mut bytes = match slot {
            Some(i) => match &self.keyspace.at(i).value {
                Value::Str(v) => v.to_vec(),
                _ => unreachable!("checked to be a string above"),
            },
            None => Vec::new(),
        };
        bytes.resize(new_len, 0);
        bytes[offset as usize..end].copy_from_slice(patch);
        let value = Value::Str(Bytes::from_slice(&bytes));
        match slot {
            Some(i) => {
                *self.keyspace.value_at_mut(i) = value;
                self.keyspace.resized(growth as i64);
            }
            None => {
                self.keyspace.insert(
                    key.clone(),
                    Entry {
                        value,
                        expire_at_ms: None,
                    },
                );
            }
        }
        self.keyspace.set_sticky(key, Some(Sticky::RawString));
        self.note_written(key, by);
        self.propagate(|| cmd.clone());
        Reply::Int(new_len as i64)
    }

    /// RENAME / RENAMENX (`renameGenericCommand`): the source must exist (else `no such
    /// key`, even when both names are the same); the same name is then a no-op; RENAMENX
    /// leaves an existing destination alone. The value moves with its deadline and
    /// encoding, replacing the destination.
    pub(super) fn rename(
        &mut self,
        now: i64,
        keys: &[Bytes; 2],
        nx: bool,
        cmd: &Command,
        by: Option<ProcId>,
    ) -> Reply {
        let [src, dst] = keys;
        if self.lookup_index(src, now).is_none() {
            return Reply::err(ERR_NO_SUCH_KEY);
        }
        let done = || if nx { Reply::Int(1) } else { Reply::Ok };
        if src == dst {
            return if nx { Reply::Int(0) } else { Reply::Ok };
        }
        let dst_live = self.lookup_index(dst, now).is_some();
        if dst_live && nx {
            return Reply::Int(0);
        }
        let sticky = self.keyspace.sticky(src);
        let (_, entry) = self
            .keyspace
            .remove(src)
            .expect("the source was found just now");
        if let Some((k, old)) = self.keyspace.remove(dst) {
            self.note_removed(&k, &old, Removal::Overwritten, by);
        }
        self.note_removed(src, &entry, Removal::Del, by);
        self.keyspace.insert(dst.clone(), entry);
        self.keyspace.set_sticky(dst, sticky);
        self.note_written(dst, by);
        self.signal_list_added(dst);
        self.propagate(|| cmd.clone());
        done()
    }

    /// COPY (`copyCommand`, options checked when parsed): the same key in the same db is an
    /// error; a missing source or (without REPLACE) an existing destination answers 0. The
    /// copy keeps the deadline and the encoding; the destination may be in another of the
    /// 16 dbs, where the WATCHes of its key are touched.
    pub(super) fn copy(
        &mut self,
        now: i64,
        keys: &[Bytes; 2],
        db: Option<u8>,
        replace: bool,
        cmd: &Command,
        by: Option<ProcId>,
    ) -> Reply {
        let [src, dst] = keys;
        let src_db = self.cur_db;
        let dst_db = db.unwrap_or(src_db);
        if src_db == dst_db && src == dst {
            return Reply::err(ERR_SAME_OBJECT);
        }
        let Some(i) = self.lookup_index(src, now) else {
            return Reply::Int(0);
        };
        let entry = self.keyspace.at(i).clone();
        let sticky = self.keyspace.sticky(src);
        self.switch_db(dst_db);
        let exists = self.lookup_index(dst, now).is_some();
        if exists && !replace {
            self.switch_db(src_db);
            return Reply::Int(0);
        }
        if let Some((k, old)) = self.keyspace.remove(dst) {
            self.note_removed(&k, &old, Removal::Overwritten, by);
        }
        self.keyspace.insert(dst.clone(), entry);
        self.keyspace.set_sticky(dst, sticky);
        self.note_written(dst, by);
        self.touch_key(dst);
        self.signal_list_added(dst);
        self.switch_db(src_db);
        self.propagate(|| cmd.clone());
        Reply::Int(1)
    }

    /// MOVE (`moveCommand`, the db read first: an int, then its range): the same db is an
    /// error; a missing source or an existing destination answers 0. The value moves with
    /// its deadline and encoding, WATCHes of the key are touched in both dbs, and a list
    /// arriving at a key a client blocks on serves it.
    pub(super) fn move_key(
        &mut self,
        now: i64,
        key: &Bytes,
        raw_db: &[u8],
        cmd: &Command,
        by: Option<ProcId>,
    ) -> Reply {
        let dst_db = match crate::proto::command::move_db(raw_db) {
            Ok(d) => d,
            Err(e) => return e.client_reply(),
        };
        let src_db = self.cur_db;
        if dst_db == src_db {
            return Reply::err(ERR_SAME_OBJECT);
        }
        if self.lookup_index(key, now).is_none() {
            return Reply::Int(0);
        }
        self.switch_db(dst_db);
        let taken = self.lookup_index(key, now).is_some();
        self.switch_db(src_db);
        if taken {
            return Reply::Int(0);
        }
        let sticky = self.keyspace.sticky(key);
        let (k, entry) = self
            .keyspace
            .remove(key)
            .expect("the key was found just now");
        self.note_removed(&k, &entry, Removal::Del, by);
        // signalModifiedKey in the source db, then in the destination.
        self.touch_key(key);
        self.switch_db(dst_db);
        self.keyspace.insert(k, entry);
        self.keyspace.set_sticky(key, sticky);
        self.note_written(key, by);
        self.touch_key(key);
        self.signal_list_added(key);
        self.switch_db(src_db);
        self.propagate(|| cmd.clone());
        Reply::Int(1)
    }

    /// SWAPDB (`dbSwapDatabases`, both indexes read first): the two dbs trade their keys;
    /// connections stay on the index they selected, so each now sees the other's keys.
    /// WATCHes of keys either db holds are touched as `touchAllWatchedKeysInDb` does both
    /// ways, and clients blocked on a key that now holds a list are served.
    pub(super) fn swapdb(&mut self, now: i64, raw: &[Bytes; 2], cmd: &Command) -> Reply {
        let [a, b] = match crate::proto::command::swapdb_indexes(raw) {
            Ok(ids) => ids,
            Err(e) => return e.client_reply(),
        };
        if a == b {
            return Reply::Ok;
        }
        self.touch_swapped(a, b, now);
        self.touch_swapped(b, a, now);
        // Db 0's keys are what the history follows: those leaving it are removed there,
        // those arriving written.
        let db0_before: Vec<(Bytes, Entry)> = match (a == 0 || b == 0, self.db_ref(0)) {
            (true, Some(ks)) => ks.iter().map(|(k, e)| (k.clone(), e.clone())).collect(),
            _ => Vec::new(),
        };
        let here = self.cur_db;
        // Neither of the two is the one `keyspace` holds while they trade places.
        let aside = (0..crate::redis::node::connection::DATABASES as u8)
            .find(|d| *d != a && *d != b)
            .expect("16 dbs");
        self.switch_db(aside);
        if self.other_dbs.is_empty() {
            // `aside` was already selected, and no other db was ever used.
            self.other_dbs = vec![Keyspace::new(); crate::redis::node::connection::DATABASES];
        }
        self.other_dbs.swap(usize::from(a), usize::from(b));
        for d in [a, b] {
            self.switch_db(d);
            for k in self.blocked_keys_of(d) {
                self.signal_list_added(&k);
            }
        }
        if a == 0 || b == 0 {
            for (k, e) in &db0_before {
                self.note_removed(k, e, Removal::Flushed, None);
            }
            self.switch_db(0);
            let arrived: Vec<Bytes> = self.keyspace.iter().map(|(k, _)| k.clone()).collect();
            for k in &arrived {
                self.note_written(k, None);
            }
        }
        self.switch_db(here);
        self.propagate(|| cmd.clone());
        Reply::Ok
    }

    /// OBJECT ENCODING: nil for a missing key (expired ones go first, as any lookup).
    pub(super) fn object_encoding(&mut self, now: i64, key: &[u8]) -> Reply {
        if self.lookup_index(key, now).is_none() {
            return Reply::Nil;
        }
        match self.keyspace.encoding_of(key) {
            Some(name) => Reply::Bulk(name.as_bytes().to_vec()),
            None => Reply::Nil,
        }
    }

    /// RANDOMKEY. Redis picks a key at random (`dictGetFairRandomKey`); the model takes the
    /// first in its keyspace order, so the two agree when the db holds one key or none.
    /// As `dbRandomKey`: a master deletes the expired keys it meets (their DELs propagated)
    /// and goes on; a replica skips them, and when every key has a deadline and all have
    /// passed it answers one anyway (Redis's 100 tries).
    pub(super) fn random_key(&mut self, now: i64) -> Reply {
        let all_volatile = self.keyspace.iter().all(|(_, e)| e.expire_at_ms.is_some());
        let mut i = 0;
        while i < self.keyspace.len() {
            let expired = self.keyspace.at(i).is_expired(now);
            if !expired || self.repl.applying_master_stream {
                return Reply::Bulk(self.keyspace.key_at(i).to_vec());
            }
            if self.is_replica() {
                i += 1;
            } else {
                // Swap-removal: the last key moves to `i`, which is read next.
                self.expire_found(i);
            }
        }
        if self.is_replica() && all_volatile && !self.keyspace.is_empty() {
            return Reply::Bulk(self.keyspace.key_at(0).to_vec());
        }
        Reply::Nil
    }

    /// LPUSH: each element in turn to the head (`LPUSH l a b` leaves `b a`).
    pub(super) fn lpush(
        &mut self,
        now: i64,
        key: &Bytes,
        vals: &[Bytes],
        cmd: &Command,
        by: Option<ProcId>,
    ) -> Reply {
        let head = vals.iter().rev().cloned();
        let len = match self.lookup_index(key, now) {
            Some(i) => {
                let Value::List(l) = self.keyspace.value_at_mut(i) else {
                    return Reply::err(WRONGTYPE);
                };
                l.splice(0..0, head);
                let len = l.len();
                let grew: u64 = vals
                    .iter()
                    .map(|b| ELEMENT_OVERHEAD_BYTES + b.len() as u64)
                    .sum();
                self.keyspace.resized(grew as i64);
                len
            }
            None => {
                self.keyspace.insert(
                    key.clone(),
                    Entry {
                        value: Value::List(head.collect()),
                        expire_at_ms: None,
                    },
                );
                self.signal_list_added(key);
                vals.len()
            }
        };
        self.note_written(key, by);
        self.propagate(|| cmd.clone());
        Reply::Int(len as i64)
    }

    /// LPOP [count] (`popGenericCommand`, the count checked when parsed): nil for a missing
    /// key (a nil array with a count), an empty array for a count of 0 (nothing changes),
    /// else the element or an array of up to `count`; the last element deletes the key.
    pub(super) fn lpop(
        &mut self,
        now: i64,
        key: &Bytes,
        count: Option<i64>,
        cmd: &Command,
        by: Option<ProcId>,
    ) -> Reply {
        let Some(i) = self.lookup_index(key, now) else {
            return Reply::Nil;
        };
        let Value::List(l) = self.keyspace.value_at_mut(i) else {
            return Reply::err(WRONGTYPE);
        };
        let take = match count {
            Some(0) => return Reply::Array(Vec::new()),
            None => 1,
            Some(n) => usize::try_from(n).map_or(l.len(), |n| n.min(l.len())),
        };
        let popped: Vec<Bytes> = l.drain(..take).collect();
        let emptied = l.is_empty();
        let shrank: u64 = popped
            .iter()
            .map(|b| ELEMENT_OVERHEAD_BYTES + b.len() as u64)
            .sum();
        self.keyspace.resized(-(shrank as i64));
        if emptied {
            // The replica's own LPOP empties it too: no DEL is propagated.
            if let Some((k, e)) = self.keyspace.remove(key) {
                self.note_removed(&k, &e, Removal::Del, by);
            }
        } else {
            self.note_written(key, by);
        }
        self.propagate(|| cmd.clone());
        let mut popped = popped.into_iter().map(|b| Reply::Bulk(b.to_vec()));
        match count {
            None => popped.next().unwrap_or(Reply::Nil),
            Some(_) => Reply::Array(popped.collect()),
        }
    }

    pub(super) fn llen(&mut self, now: i64, key: &[u8]) -> Reply {
        match self.lookup(key, now) {
            None => Reply::Int(0),
            Some(Entry {
                value: Value::List(l),
                ..
            }) => Reply::Int(l.len() as i64),
            Some(_) => Reply::err(WRONGTYPE),
        }
    }
}
