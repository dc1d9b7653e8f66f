//! The hash commands: HSET/HMSET, HGET-family reads, HINCRBY, HINCRBYFLOAT, HDEL, HSETNX,
//! HKEYS, HVALS, HSTRLEN, as Redis 7.0.15's `t_hash.c` runs them (the order of checks, replies and error
//! texts, the propagated effect), and the listpack-to-hashtable conversion OBJECT ENCODING
//! shows. A child of node: it only adds `impl` blocks to `RedisNode`.

use crate::history::Removal;
use crate::proto::command::parse_i64_strict;
use crate::proto::{Bytes, Command, Reply};
use crate::redis::keyspace::{
    ELEMENT_OVERHEAD_BYTES, Entry, HASH_MAX_LISTPACK_ENTRIES, HASH_MAX_LISTPACK_VALUE, Sticky,
    Value,
};
use crate::redis::long_double::LongDouble;
use crate::redis::node::{ERR_OVERFLOW, RedisNode, WRONGTYPE};
use crate::time::ProcId;

/// Does a hash write's argument make Redis 7.0.15 convert the listpack to a dict
/// (`hashTypeTryConversion`: a field or value longer than `hash-max-listpack-value`)?
fn long_for_listpack(b: &[u8]) -> bool {
    b.len() > HASH_MAX_LISTPACK_VALUE
}

impl RedisNode {
    /// HGET, HEXISTS, HGETALL, HLEN, HMGET: reads of one hash (nothing for a missing key,
    /// WRONGTYPE for another type).
    pub(super) fn hash_read(&mut self, now: i64, cmd: &Command) -> Reply {
        match cmd {
            Command::HGet(key, field) => match self.hash_fields(key, now) {
                Err(e) => e,
                Ok(fields) => fields
                    .and_then(|fs| fs.iter().find(|(f, _)| f == field))
                    .map_or(Reply::Nil, |(_, v)| Reply::Bulk(v.to_vec())),
            },
            Command::HExists(key, field) => match self.hash_fields(key, now) {
                Err(e) => e,
                Ok(fields) => Reply::Int(i64::from(
                    fields.is_some_and(|fs| fs.iter().any(|(f, _)| f == field)),
                )),
            },
            Command::HGetAll(key) => match self.hash_fields(key, now) {
                Err(e) => e,
                Ok(fields) => Reply::Array(
                    fields
                        .into_iter()
                        .flatten()
                        .flat_map(|(f, v)| [Reply::Bulk(f.to_vec()), Reply::Bulk(v.to_vec())])
                        .collect(),
                ),
            },
            Command::HLen(key) => match self.hash_fields(key, now) {
                Err(e) => e,
                Ok(fields) => Reply::Int(fields.map_or(0, |fs| fs.len() as i64)),
            },
            Command::HMGet(key, wanted) => match self.hash_fields(key, now) {
                Err(e) => e,
                Ok(fields) => Reply::Array(
                    wanted
                        .iter()
                        .map(|w| {
                            fields
                                .and_then(|fs| fs.iter().find(|(f, _)| f == w))
                                .map_or(Reply::Nil, |(_, v)| Reply::Bulk(v.to_vec()))
                        })
                        .collect(),
                ),
            },
            _ => unreachable!("hash_read of another command"),
        }
    }

    /// The fields of the hash at `key` (lazy expiry applied): `Ok(None)` when there is no
    /// key, WRONGTYPE when it holds another type.
    pub(super) fn hash_fields(
        &mut self,
        key: &[u8],
        now: i64,
    ) -> Result<Option<&[(Bytes, Bytes)]>, Reply> {
        match self.lookup(key, now) {
            None => Ok(None),
            Some(Entry {
                value: Value::Hash(fields),
                ..
            }) => Ok(Some(fields.as_slice())),
            Some(_) => Err(Reply::err(WRONGTYPE)),
        }
    }

    /// The hash at `key` for writing, created empty when missing (`hashTypeLookupWriteOrCreate`).
    /// The caller must leave it non-empty or delete the key.
    pub(super) fn hash_for_write(&mut self, key: &Bytes, now: i64) -> Result<usize, Reply> {
        match self.lookup(key, now) {
            None => {}
            Some(Entry {
                value: Value::Hash(_),
                ..
            }) => {}
            Some(_) => return Err(Reply::err(WRONGTYPE)),
        }
        if let Some(i) = self.keyspace.index_of(key) {
            return Ok(i);
        }
        self.keyspace.insert(
            key.clone(),
            Entry {
                value: Value::Hash(Vec::new()),
                expire_at_ms: None,
            },
        );
        Ok(self
            .keyspace
            .index_of(key)
            .expect("the key was inserted just now"))
    }

    pub(super) fn hset(
        &mut self,
        now: i64,
        key: &Bytes,
        pairs: &[(Bytes, Bytes)],
        cmd: &Command,
        by: Option<ProcId>,
    ) -> Reply {
        let i = match self.hash_for_write(key, now) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let Value::Hash(fields) = self.keyspace.value_at_mut(i) else {
            unreachable!("hash_for_write returns a hash")
        };
        let mut added = 0;
        let mut grew = 0i64;
        for (f, v) in pairs {
            match fields.iter_mut().find(|(have, _)| have == f) {
                Some(slot) => {
                    grew += v.len() as i64 - slot.1.len() as i64;
                    slot.1 = v.clone();
                }
                None => {
                    grew += (ELEMENT_OVERHEAD_BYTES + (f.len() + v.len()) as u64) as i64;
                    fields.push((f.clone(), v.clone()));
                    added += 1;
                }
            }
        }
        self.keyspace.resized(grew);
        self.note_hash_encoding(key, pairs);
        self.note_written(key, by);
        self.propagate(|| cmd.clone());
        Reply::Int(added)
    }

    pub(super) fn hincrby(
        &mut self,
        now: i64,
        key: &Bytes,
        field: &Bytes,
        delta: i64,
        by: Option<ProcId>,
    ) -> Reply {
        let i = match self.hash_for_write(key, now) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let Value::Hash(fields) = self.keyspace.value_at_mut(i) else {
            unreachable!("hash_for_write returns a hash")
        };
        let slot = fields.iter().position(|(f, _)| f == field);
        let current = match slot {
            None => 0,
            Some(j) => match parse_i64_strict(&fields[j].1) {
                Some(n) => n,
                None => {
                    let e = Reply::err("ERR hash value is not an integer");
                    return self.drop_if_empty_hash(key, e);
                }
            },
        };
        let Some(next) = current.checked_add(delta) else {
            return self.drop_if_empty_hash(key, Reply::err(ERR_OVERFLOW));
        };
        let text = Bytes::from_slice(next.to_string().as_bytes());
        self.store_field(i, field, text);
        // hashTypeSet converts a listpack for a long field (its value is a number).
        self.note_hash_field_written(key, field);
        self.note_written(key, by);
        self.propagate(|| Command::HIncrBy(key.clone(), field.clone(), delta));
        Reply::Int(next)
    }

    /// HINCRBYFLOAT (`hincrbyfloatCommand`): the increment is read first (a long double,
    /// neither NaN nor infinite), then the key's type, then the field's value (a long
    /// double too); the sum is stored as `%.17Lf` with its zeros trimmed, and propagated as
    /// HSET of that text, so that replicas need not add floats themselves.
    pub(super) fn hincrbyfloat(
        &mut self,
        now: i64,
        key: &Bytes,
        field: &Bytes,
        raw: &[u8],
        by: Option<ProcId>,
    ) -> Reply {
        let Some(incr) = LongDouble::parse(raw) else {
            return Reply::err("ERR value is not a valid float");
        };
        if incr.is_inf() {
            return Reply::err("ERR value is NaN or Infinity");
        }
        let i = match self.hash_for_write(key, now) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let Value::Hash(fields) = self.keyspace.value_at_mut(i) else {
            unreachable!("hash_for_write returns a hash")
        };
        let current = match fields.iter().find(|(f, _)| f == field) {
            None => LongDouble::ZERO,
            Some((_, v)) => match LongDouble::parse(v) {
                Some(v) => v,
                None => {
                    let e = Reply::err("ERR hash value is not a float");
                    return self.drop_if_empty_hash(key, e);
                }
            },
        };
        let Some(sum) = current.plus(incr).filter(|s| !s.is_inf()) else {
            let e = Reply::err("ERR increment would produce NaN or Infinity");
            return self.drop_if_empty_hash(key, e);
        };
        let text = Bytes::from_slice(sum.to_human().as_bytes());
        self.store_field(i, field, text.clone());
        let pair = [(field.clone(), text.clone())];
        self.note_hash_encoding(key, &pair);
        self.note_written(key, by);
        self.propagate(|| Command::HSet(key.clone(), pair.to_vec()));
        Reply::Bulk(text.to_vec())
    }

    /// Sets `field` of the hash at position `i` to `value` (added last when missing), and
    /// the keyspace's weight with it.
    fn store_field(&mut self, i: usize, field: &Bytes, value: Bytes) {
        let Value::Hash(fields) = self.keyspace.value_at_mut(i) else {
            unreachable!("store_field of a hash")
        };
        let grew = match fields.iter_mut().find(|(f, _)| f == field) {
            Some(slot) => {
                let grew = value.len() as i64 - slot.1.len() as i64;
                slot.1 = value;
                grew
            }
            None => {
                let grew = (ELEMENT_OVERHEAD_BYTES + (field.len() + value.len()) as u64) as i64;
                fields.push((field.clone(), value));
                grew
            }
        };
        self.keyspace.resized(grew);
    }

    /// An error after `hash_for_write` created a hash: an empty hash is never left stored
    /// (Redis creates it only on the path that then adds the field).
    fn drop_if_empty_hash(&mut self, key: &Bytes, reply: Reply) -> Reply {
        if matches!(self.keyspace.raw(key), Some(Entry { value: Value::Hash(f), .. }) if f.is_empty())
        {
            self.keyspace.remove(key);
        }
        reply
    }

    pub(super) fn hdel(
        &mut self,
        now: i64,
        key: &Bytes,
        gone: &[Bytes],
        cmd: &Command,
        by: Option<ProcId>,
    ) -> Reply {
        let Some(entry) = self.lookup_mut(key, now) else {
            return Reply::Int(0);
        };
        let Value::Hash(fields) = &mut entry.value else {
            return Reply::err(WRONGTYPE);
        };
        // The removal record names the hash by its first field (the lock holder) as it was
        // before the fields went.
        let first = fields.first().map(|(f, _)| f.clone());
        let mut deleted = 0;
        let mut shrank = 0u64;
        for g in gone {
            if let Some(j) = fields.iter().position(|(f, _)| f == g) {
                // `remove`, not `swap_remove`: a listpack keeps the other fields in order.
                let (f, v) = fields.remove(j);
                shrank += ELEMENT_OVERHEAD_BYTES + (f.len() + v.len()) as u64;
                deleted += 1;
            }
        }
        let emptied = fields.is_empty();
        self.keyspace.resized(-(shrank as i64));
        if deleted > 0 {
            if emptied {
                // The key goes with its last field; replicas do the same on the HDEL itself,
                // so no DEL is propagated.
                if let Some((k, mut e)) = self.keyspace.remove(key) {
                    e.value = Value::Hash(first.into_iter().map(|f| (f, Bytes::new())).collect());
                    self.note_removed(&k, &e, Removal::Del, by);
                }
            } else {
                self.note_written(key, by);
            }
            self.propagate(|| cmd.clone());
        }
        Reply::Int(deleted)
    }

    /// HSETNX: 0 and nothing changed (no conversion either) when the field exists; else
    /// HSET of the one pair (its size, conversion, write and propagation).
    pub(super) fn hsetnx(
        &mut self,
        now: i64,
        key: &Bytes,
        field: &Bytes,
        value: &Bytes,
        cmd: &Command,
        by: Option<ProcId>,
    ) -> Reply {
        let i = match self.hash_for_write(key, now) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if matches!(self.keyspace.value_at_mut(i), Value::Hash(fields) if fields.iter().any(|(f, _)| f == field))
        {
            return Reply::Int(0);
        }
        self.hset(now, key, &[(field.clone(), value.clone())], cmd, by)
    }

    /// After HSET/HMSET wrote `pairs` into the hash at `key`: `hashTypeTryConversion` (a
    /// long field or value among the arguments) or `hashTypeSet`'s entry count converts
    /// the listpack to a dict for good. (7.0.15's `hashTypeSet` converts for any long field
    /// or value it writes, so HINCRBY of a long field converts too.)
    pub(super) fn note_hash_encoding(&mut self, key: &Bytes, pairs: &[(Bytes, Bytes)]) {
        let long = pairs
            .iter()
            .any(|(f, v)| long_for_listpack(f) || long_for_listpack(v));
        self.note_hash_size(key, long);
    }

    /// HINCRBY wrote `field`: `hashTypeSet` converts for a long field, or past 512.
    pub(super) fn note_hash_field_written(&mut self, key: &Bytes, field: &[u8]) {
        self.note_hash_size(key, long_for_listpack(field));
    }

    /// A write that may have added a field (`hashTypeSet`): past 512 fields the hash is a
    /// dict. `long`: the write's arguments converted it already.
    pub(super) fn note_hash_size(&mut self, key: &Bytes, long: bool) {
        let many = matches!(
            self.keyspace.raw(key),
            Some(Entry { value: Value::Hash(f), .. }) if f.len() > HASH_MAX_LISTPACK_ENTRIES
        );
        if (long || many) && self.keyspace.sticky(key) != Some(Sticky::Hashtable) {
            self.keyspace.set_sticky(key, Some(Sticky::Hashtable));
        }
    }

    /// HKEYS (`fields`) / HVALS, in the listpack's order.
    pub(super) fn hash_column(&mut self, now: i64, key: &[u8], fields: bool) -> Reply {
        match self.hash_fields(key, now) {
            Err(e) => e,
            Ok(all) => Reply::Array(
                all.into_iter()
                    .flatten()
                    .map(|(f, v)| Reply::Bulk(if fields { f.to_vec() } else { v.to_vec() }))
                    .collect(),
            ),
        }
    }

    pub(super) fn hstrlen(&mut self, now: i64, key: &[u8], field: &Bytes) -> Reply {
        match self.hash_fields(key, now) {
            Err(e) => e,
            Ok(all) => Reply::Int(
                all.and_then(|fs| fs.iter().find(|(f, _)| f == field))
                    .map_or(0, |(_, v)| v.len() as i64),
            ),
        }
    }
}
