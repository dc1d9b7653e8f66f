//! The string and expiry commands on one key: SET with its options (NX/XX, GET, the expiry
//! forms, KEEPTTL), GETEX, EXPIRE and its family, INCR and its family, as Redis 7.0.15's
//! `t_string.c` and `expire.c` run them (the order of checks, replies and error texts, the
//! propagated effect). A child of node: it only adds an `impl` block to `RedisNode`.

use crate::history::{Observation, Removal};
use crate::proto::command::{
    ERR_NOT_INTEGER, ExpireCond, ExpireKind, ExpiryUnit, GetExOpt, SetCond, SetExpiry,
    parse_i64_strict,
};
use crate::proto::{Bytes, Command, Reply};
use crate::redis::keyspace::{Entry, Value};
use crate::redis::node::{ERR_OVERFLOW, RedisNode, WRONGTYPE};
use crate::time::ProcId;

impl RedisNode {
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn set(
        &mut self,
        now: i64,
        key: &Bytes,
        value: &Bytes,
        cond: Option<SetCond>,
        get: bool,
        expiry: Option<SetExpiry>,
        by: Option<ProcId>,
    ) -> Reply {
        // Order of checks as in Redis 7.0 setGenericCommand: expire value, GET's type check,
        // then NX/XX.
        let Some(expire_at) = absolute_expiry(expiry, now) else {
            return invalid_expire_time("set");
        };
        let slot = self.lookup_index_bytes(key, now);
        // The refused NX without GET (most of a contended lock's SETs) answers here, in the
        // caller's frame: nil whatever the key holds, as `set_at` would (GET's type check
        // is not asked for), without the frame the write path needs.
        if cond == Some(SetCond::Nx) && slot.is_some() && !get {
            return Reply::Nil;
        }
        self.set_at(now, key, value, cond, get, expiry, expire_at, slot, by)
    }

    /// SET past its expiry check and lookup (`slot`: the live key's position).
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(super) fn set_at(
        &mut self,
        now: i64,
        key: &Bytes,
        value: &Bytes,
        cond: Option<SetCond>,
        get: bool,
        expiry: Option<SetExpiry>,
        expire_at: Option<i64>,
        slot: Option<usize>,
        by: Option<ProcId>,
    ) -> Reply {
        // (old TTL, GET's reply): the old value is copied only when GET asks for it.
        let (old_ttl, old_reply) = match slot.map(|i| self.keyspace.at(i)) {
            None => (None, Reply::Nil),
            Some(Entry {
                value: Value::Str(v),
                expire_at_ms,
            }) => (
                *expire_at_ms,
                if get {
                    Reply::Bulk(v.to_vec())
                } else {
                    Reply::Nil
                },
            ),
            Some(Entry {
                value: Value::List(_) | Value::Hash(_),
                expire_at_ms,
            }) => {
                if get {
                    return Reply::err(WRONGTYPE);
                }
                (*expire_at_ms, Reply::Nil)
            }
        };
        let found = slot.is_some();
        if (cond == Some(SetCond::Nx) && found) || (cond == Some(SetCond::Xx) && !found) {
            return old_reply;
        }
        let keep = if expiry == Some(SetExpiry::KeepTtl) {
            old_ttl
        } else {
            None
        };
        let expire_at_ms = expire_at.or(keep);
        let entry = Entry {
            value: Value::Str(value.clone()),
            expire_at_ms,
        };
        // A live key is replaced where it stands (as `insert` would: same position, same
        // stored key); otherwise inserted (a replica's hidden expired key is replaced too).
        let replaced = match slot {
            Some(i) => Some(self.keyspace.replace_at(i, entry)),
            None => self.keyspace.insert(key.clone(), entry),
        };
        if let Some(prev) = replaced
            && !matches!(&prev.value, Value::Str(v) if v == value)
        {
            self.note_removed(key, &prev, Removal::Overwritten, by);
        }
        // `note_written` without looking the key up again: the entry is the one just made.
        if self.config.observe_keys {
            self.pending.push(Observation::KeyWritten {
                key: key.clone(),
                value: value.clone(),
                expire_at_ms,
                by,
            });
        }
        // Redis 7.0 propagates the effect with an absolute deadline (`PXAT`), NX/XX/GET
        // dropped; before 7.0 the relative form was sent.
        let expiry = match (expire_at, expiry) {
            (Some(t), _) if self.config.relative_ttl_propagation => {
                Some(SetExpiry::Px((t - now).max(1)))
            }
            (Some(t), _) => Some(SetExpiry::PxAt(t)),
            (None, Some(SetExpiry::KeepTtl)) => Some(SetExpiry::KeepTtl),
            _ => None,
        };
        self.propagate(|| Command::Set {
            key: key.clone(),
            value: value.clone(),
            cond: None,
            get: false,
            expiry,
        });
        if get {
            old_reply
        } else {
            // Nil when GET is not asked for: let go without the call into the drop glue.
            old_reply.release();
            Reply::Ok
        }
    }

    /// GETEX as Redis 7.0's `getexCommand`: the expiry is validated before the lookup; the
    /// command is never propagated as itself but as PEXPIREAT, DEL (an EXAT/PXAT already
    /// past) or PERSIST.
    pub(super) fn getex(
        &mut self,
        now: i64,
        key: &Bytes,
        opt: &Option<GetExOpt>,
        by: Option<ProcId>,
    ) -> Reply {
        let is_replica = self.is_replica();
        let Some(Entry {
            value: Value::Str(v),
            ..
        }) = self.lookup(key, now)
        else {
            return match self.keyspace.raw(key) {
                Some(e) if self.repl.applying_master_stream || !e.is_expired(now) => {
                    Reply::err(WRONGTYPE)
                }
                _ => Reply::Nil,
            };
        };
        let reply = Reply::Bulk(v.to_vec());
        // The amount is validated after the type check, as in Redis 7.0's getexCommand.
        let expire_at = match opt {
            Some(GetExOpt::Expiry(unit, raw)) => {
                let Some(n) = parse_i64_strict(raw) else {
                    return Reply::err(ERR_NOT_INTEGER);
                };
                match absolute_expiry(Some(unit.with(n)), now) {
                    Some(t) => t,
                    None => return invalid_expire_time("getex"),
                }
            }
            _ => None,
        };
        let absolute = matches!(
            opt,
            Some(GetExOpt::Expiry(ExpiryUnit::ExAt | ExpiryUnit::PxAt, _))
        );
        let Some(entry) = self.keyspace.raw_mut(key) else {
            unreachable!("the key was found just now")
        };
        match (opt, expire_at) {
            (_, Some(t)) if absolute && t <= now && !is_replica => {
                self.remove_key(key, Removal::Expired, by);
            }
            (_, Some(t)) => {
                entry.expire_at_ms = Some(t);
                self.note_written(key, by);
                self.propagate(|| Command::Expire {
                    kind: ExpireKind::PExpireAt,
                    key: key.clone(),
                    when: t,
                    cond: ExpireCond::default(),
                });
            }
            // PERSIST on a key with a TTL; on one without, nothing changes and nothing is sent.
            (Some(GetExOpt::Persist), None) if entry.expire_at_ms.take().is_some() => {
                self.note_written(key, by);
                self.propagate(|| Command::Persist(key.clone()));
            }
            _ => {}
        }
        reply
    }

    pub(super) fn expire(
        &mut self,
        now: i64,
        kind: ExpireKind,
        key: &Bytes,
        when: i64,
        cond: ExpireCond,
        by: Option<ProcId>,
    ) -> Reply {
        let invalid = || {
            Reply::Error(format!(
                "ERR invalid expire time in '{}' command",
                kind.name()
            ))
        };
        let mut when = when;
        if kind.in_seconds() {
            if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
                return invalid();
            }
            when *= 1000;
        }
        let base = if kind.is_absolute() { 0 } else { now };
        if when > i64::MAX - base {
            return invalid();
        }
        when += base;
        let is_replica = self.is_replica();
        let relative = self.config.relative_ttl_propagation;
        let Some(entry) = self.lookup_mut(key, now) else {
            return Reply::Int(0);
        };
        let current = entry.expire_at_ms;
        if (cond.nx && current.is_some())
            || (cond.xx && current.is_none())
            || (cond.gt && current.is_none_or(|c| when <= c))
            || (cond.lt && current.is_some_and(|c| when >= c))
        {
            return Reply::Int(0);
        }
        // checkAlreadyExpired: a deadline at or before now deletes the key, except on a
        // replica (it waits for the master's DEL).
        if when <= now && !is_replica {
            self.remove_key(key, Removal::Expired, by);
        } else {
            entry.expire_at_ms = Some(when);
            self.note_written(key, by);
            let effect = if relative {
                Command::Expire {
                    kind: ExpireKind::PExpire,
                    key: key.clone(),
                    when: when - now,
                    cond: ExpireCond::default(),
                }
            } else {
                Command::Expire {
                    kind: ExpireKind::PExpireAt,
                    key: key.clone(),
                    when,
                    cond: ExpireCond::default(),
                }
            };
            self.propagate(|| effect);
        }
        Reply::Int(1)
    }

    pub(super) fn incr(&mut self, now: i64, key: &Bytes, delta: i64, by: Option<ProcId>) -> Reply {
        let (current, ttl) = match self.lookup(key, now) {
            None => (0, None),
            Some(Entry {
                value: Value::Str(v),
                expire_at_ms,
            }) => match parse_i64_strict(v) {
                Some(n) => (n, *expire_at_ms),
                None => return Reply::err(ERR_NOT_INTEGER),
            },
            Some(_) => return Reply::err(WRONGTYPE),
        };
        let Some(next) = current.checked_add(delta) else {
            return Reply::err(ERR_OVERFLOW);
        };
        self.keyspace.insert(
            key.clone(),
            Entry {
                value: Value::Str(Bytes::from_slice(next.to_string().as_bytes())),
                expire_at_ms: ttl,
            },
        );
        self.note_written(key, by);
        self.propagate(|| Command::IncrBy(key.clone(), delta));
        Reply::Int(next)
    }
}

/// An expiry option as an absolute deadline on the node's clock, with Redis 7.0's checks
/// (`getExpireMillisecondsOrReply`): a non-positive amount, seconds that overflow in ms, or a
/// relative deadline that overflows are invalid (`None`; the caller answers
/// `invalid_expire_time`). The error is made out of line: made here, its command name was
/// set up on every SET before the option was even looked at.
#[inline(always)]
fn absolute_expiry(expiry: Option<SetExpiry>, now: i64) -> Option<Option<i64>> {
    Some(match expiry {
        None | Some(SetExpiry::KeepTtl) => None,
        Some(SetExpiry::Ex(v) | SetExpiry::ExAt(v)) if v <= 0 || v > i64::MAX / 1000 => {
            return None;
        }
        Some(SetExpiry::Px(v) | SetExpiry::PxAt(v)) if v <= 0 => return None,
        Some(SetExpiry::Ex(v)) => match (v * 1000).checked_add(now) {
            Some(t) if t > 0 => Some(t),
            _ => return None,
        },
        Some(SetExpiry::Px(v)) => match v.checked_add(now) {
            Some(t) if t > 0 => Some(t),
            _ => return None,
        },
        Some(SetExpiry::ExAt(v)) => Some(v * 1000),
        Some(SetExpiry::PxAt(v)) => Some(v),
    })
}

/// `ERR invalid expire time in '<cmd>' command`.
#[cold]
#[inline(never)]
fn invalid_expire_time(cmd: &str) -> Reply {
    Reply::Error(format!("ERR invalid expire time in '{cmd}' command"))
}
