//! A Redis 7.0 server as a sans-IO process: executes typed commands against its keyspace at
//! the node's wall-clock time, runs scripts atomically with time frozen, expires keys lazily
//! and in a 100 ms active cycle, and reports key removals to the history.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::history::{Observation, Removal};
use crate::process::{Cx, Process};
use crate::proto::command::{
    ERR_NOT_INTEGER, ExpireCond, ExpireKind, ScriptRef, SetCond, SetExpiry, hex, parse_i64_strict,
    sha1_of,
};
use crate::proto::{Bytes, Command, Msg, Reply, Script};
use crate::redis::keyspace::{Entry, Keyspace, Value, glob_match};
use crate::redis::lua::LuaEngine;
use crate::redis::scripts::{NativeScript, native_script};
use crate::time::{NS_PER_MS, ProcId};

pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const READONLY: &str = "READONLY You can't write against a read only replica.";
pub const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";
const ERR_OVERFLOW: &str = "ERR increment or decrement would overflow";

/// Period of the server cron (hz 10) on the node's monotonic clock.
pub const CRON_PERIOD_NS: u64 = 100 * NS_PER_MS;
/// Active expiry deletes at most this many keys per cycle (Redis bounds it by CPU time; the
/// bound matters only for huge keyspaces, which lock models do not have).
pub const ACTIVE_EXPIRE_KEYS_PER_CYCLE: usize = 1_000;
/// Timer tag of the cron.
const TIMER_CRON: u64 = 1;

/// Configuration of one node.
#[derive(Clone, Debug)]
pub struct RedisConfig {
    /// Report KeyRemoved/KeyWritten observations (checkers need them; the corpus does not).
    pub observe_keys: bool,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig { observe_keys: true }
    }
}

/// A client blocked in WAIT.
#[derive(Clone, Debug)]
struct Waiter {
    client: ProcId,
    id: u64,
    /// Node monotonic ns at which the timeout passes; `None` = wait forever.
    deadline_mono_ns: Option<u64>,
}

/// The server's state.
pub struct RedisNode {
    pub config: RedisConfig,
    pub keyspace: Keyspace,
    // Invariant: every entry's key is the SHA1 of its source.
    scripts: BTreeMap<[u8; 20], Arc<[u8]>>,
    lua: Option<LuaEngine>,
    active_expire: bool,
    /// A replica (REPLICAOF host port) refuses writes. Replication itself is not modelled yet.
    read_only_replica: bool,
    waiters: Vec<Waiter>,
    /// Observations produced while executing; drained into the loop by the process wrapper.
    pending: Vec<Observation>,
}

/// Who runs a command: a client over the network, or the corpus runner.
#[derive(Clone, Copy, Debug)]
pub struct Caller {
    pub proc: Option<ProcId>,
}

/// Context of a command running inside a script.
#[derive(Clone, Copy)]
struct InScript {
    read_only: bool,
}

fn suffixed(msg: &str, sha_hex: &str) -> Reply {
    Reply::Error(format!("{msg} script: {sha_hex}, on @user_script:1."))
}

impl RedisNode {
    pub fn new(config: RedisConfig) -> RedisNode {
        RedisNode {
            config,
            keyspace: Keyspace::new(),
            scripts: BTreeMap::new(),
            lua: None,
            active_expire: true,
            read_only_replica: false,
            waiters: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// Observations produced since the last call.
    pub fn drain_observations(&mut self) -> std::vec::Drain<'_, Observation> {
        self.pending.drain(..)
    }

    fn note_removed(&mut self, key: &Bytes, entry: &Entry, how: Removal, by: Option<ProcId>) {
        if self.config.observe_keys {
            self.pending.push(Observation::KeyRemoved {
                key: key.clone(),
                value: entry.value.shared_bytes(),
                how,
                by,
            });
        }
    }

    fn note_written(&mut self, key: &Bytes, by: Option<ProcId>) {
        if self.config.observe_keys
            && let Some(e) = self.keyspace.raw(key)
        {
            self.pending.push(Observation::KeyWritten {
                key: key.clone(),
                value: e.value.shared_bytes(),
                expire_at_ms: e.expire_at_ms,
                by,
            });
        }
    }

    /// Looks a key up applying lazy expiry: an expired key is deleted (a master) or hidden
    /// (a replica, which never deletes by itself).
    fn lookup(&mut self, key: &[u8], now_ms: i64) -> Option<&mut Entry> {
        let i = self.keyspace.index_of(key)?;
        if self.keyspace.at(i).is_expired(now_ms) {
            if !self.read_only_replica
                && let Some((k, e)) = self.keyspace.remove_at(i)
            {
                self.note_removed(&k, &e, Removal::Expired, None);
            }
            return None;
        }
        Some(self.keyspace.at_mut(i))
    }

    fn remove_key(&mut self, key: &[u8], how: Removal, by: Option<ProcId>) -> bool {
        match self.keyspace.remove(key) {
            Some((k, e)) => {
                self.note_removed(&k, &e, how, by);
                true
            }
            None => false,
        }
    }

    /// One active expire cycle (`now >= t`), as the cron runs it every 100 ms.
    pub fn active_expire_cycle(&mut self, now_ms: i64) {
        if !self.active_expire || self.read_only_replica {
            return;
        }
        for key in self.keyspace.due_keys(now_ms, ACTIVE_EXPIRE_KEYS_PER_CYCLE) {
            self.remove_key(&key, Removal::Expired, None);
        }
    }

    /// Executes one command at wall time `now_ms`. `None` means the client is blocked (WAIT)
    /// and will be answered later by the cron.
    pub fn execute(&mut self, now_ms: i64, cmd: &Command, caller: Caller) -> Reply {
        if self.read_only_replica && cmd.is_write() {
            return Reply::err(READONLY);
        }
        self.exec(now_ms, cmd, caller, None)
    }

    fn exec(
        &mut self,
        now: i64,
        cmd: &Command,
        caller: Caller,
        in_script: Option<InScript>,
    ) -> Reply {
        let by = caller.proc;
        match cmd {
            Command::Ping(None) => Reply::Status("PONG".into()),
            Command::Ping(Some(m)) => Reply::Bulk(m.to_vec()),
            Command::Get(k) => match self.lookup(k, now) {
                None => Reply::Nil,
                Some(Entry {
                    value: Value::Str(v),
                    ..
                }) => Reply::Bulk(v.to_vec()),
                Some(_) => Reply::err(WRONGTYPE),
            },
            Command::Set {
                key,
                value,
                cond,
                get,
                expiry,
            } => self.set(now, key, value, *cond, *get, *expiry, by),
            Command::SetNx(key, value) => {
                match self.set(now, key, value, Some(SetCond::Nx), false, None, by) {
                    Reply::Ok => Reply::Int(1),
                    Reply::Nil => Reply::Int(0),
                    other => other,
                }
            }
            Command::Del(keys) => {
                let mut n = 0;
                for k in keys {
                    if self.lookup(k, now).is_some() && self.remove_key(k, Removal::Del, by) {
                        n += 1;
                    }
                }
                Reply::Int(n)
            }
            Command::Exists(keys) => {
                let mut n = 0;
                for k in keys {
                    if self.lookup(k, now).is_some() {
                        n += 1;
                    }
                }
                Reply::Int(n)
            }
            Command::Expire {
                kind,
                key,
                when,
                cond,
            } => self.expire(now, *kind, key, *when, *cond, by),
            Command::Ttl { key, ms } => match self.lookup(key, now) {
                None => Reply::Int(-2),
                Some(Entry {
                    expire_at_ms: None, ..
                }) => Reply::Int(-1),
                Some(Entry {
                    expire_at_ms: Some(t),
                    ..
                }) => {
                    let left = (i128::from(*t) - i128::from(now)).max(0);
                    let v = if *ms { left } else { (left + 500) / 1000 };
                    Reply::Int(v.min(i128::from(i64::MAX)) as i64)
                }
            },
            Command::ExpireTime { key, ms } => match self.lookup(key, now) {
                None => Reply::Int(-2),
                Some(Entry {
                    expire_at_ms: None, ..
                }) => Reply::Int(-1),
                Some(Entry {
                    expire_at_ms: Some(t),
                    ..
                }) => Reply::Int(if *ms {
                    *t
                } else {
                    ((i128::from(*t) + 500) / 1000) as i64
                }),
            },
            Command::Persist(k) => match self.lookup(k, now) {
                Some(e) if e.expire_at_ms.is_some() => {
                    e.expire_at_ms = None;
                    Reply::Int(1)
                }
                _ => Reply::Int(0),
            },
            Command::IncrBy(k, by_n) => self.incr(now, k, *by_n, by),
            Command::DecrBy(k, n) => {
                if *n == i64::MIN {
                    return Reply::err("ERR decrement would overflow");
                }
                self.incr(now, k, -*n, by)
            }
            Command::Eval {
                script,
                keys,
                args,
                read_only,
            } => {
                if in_script.is_some() {
                    return Reply::err("ERR This Redis command is not allowed from script");
                }
                self.eval(now, script, keys, args, *read_only, by)
            }
            Command::ScriptLoad(src) => {
                let script = Script::new(src);
                if native_script(&script.sha).is_none() {
                    let lua = self.lua.get_or_insert_with(LuaEngine::new);
                    if let Err(e) = lua.compile(src) {
                        return Reply::Error(e);
                    }
                }
                self.scripts.insert(script.sha, script.source.clone());
                Reply::Bulk(script.sha_hex().into_bytes())
            }
            Command::ScriptExists(shas) => Reply::Array(
                shas.iter()
                    .map(|s| {
                        let known = crate::proto::command::parse_sha_hex(s)
                            .is_some_and(|sha| self.scripts.contains_key(&sha));
                        Reply::Int(i64::from(known))
                    })
                    .collect(),
            ),
            Command::ScriptFlush => {
                self.scripts.clear();
                self.lua = None;
                Reply::Ok
            }
            Command::FlushAll => {
                let keys: Vec<Bytes> = self.keyspace.iter().map(|(k, _)| k.clone()).collect();
                for k in keys {
                    self.remove_key(&k, Removal::Flushed, by);
                }
                Reply::Ok
            }
            Command::DbSize => Reply::Int(self.keyspace.len() as i64),
            Command::Keys(pattern) => Reply::Array(
                self.keyspace
                    .iter()
                    .filter(|(k, e)| !e.is_expired(now) && glob_match(pattern, k))
                    .map(|(k, _)| Reply::Bulk(k.to_vec()))
                    .collect(),
            ),
            Command::Type(k) => match self.lookup(k, now) {
                None => Reply::Status("none".into()),
                Some(e) => Reply::Status(e.value.type_name().into()),
            },
            Command::RPush(k, vals) => match self.lookup(k, now) {
                Some(Entry {
                    value: Value::List(l),
                    ..
                }) => {
                    l.extend(vals.iter().cloned());
                    Reply::Int(l.len() as i64)
                }
                Some(_) => Reply::err(WRONGTYPE),
                None => {
                    self.keyspace.insert(
                        k.clone(),
                        Entry {
                            value: Value::List(vals.clone()),
                            expire_at_ms: None,
                        },
                    );
                    Reply::Int(vals.len() as i64)
                }
            },
            Command::DebugSetActiveExpire(on) => {
                self.active_expire = *on;
                Reply::Ok
            }
            Command::ReplicaOf(target) => {
                self.read_only_replica = target.is_some();
                Reply::Ok
            }
            Command::Wait { .. } => {
                if self.read_only_replica {
                    return Reply::err(
                        "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
                    );
                }
                // No replicas are modelled yet: the count reached is 0. Blocking WAITs are
                // answered by `handle` (the process wrapper), which knows the clock.
                Reply::Int(0)
            }
            Command::Role => Reply::Array(vec![
                Reply::Bulk(b"master".to_vec()),
                Reply::Int(0),
                Reply::Array(vec![]),
            ]),
            Command::Select(0) => Reply::Ok,
            Command::Select(_) => Reply::err("ERR DB index is out of range"),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn set(
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
        let invalid = || Reply::err("ERR invalid expire time in 'set' command");
        let expire_at: Option<i64> = match expiry {
            None | Some(SetExpiry::KeepTtl) => None,
            Some(SetExpiry::Ex(v) | SetExpiry::ExAt(v)) if v <= 0 || v > i64::MAX / 1000 => {
                return invalid();
            }
            Some(SetExpiry::Px(v) | SetExpiry::PxAt(v)) if v <= 0 => return invalid(),
            Some(SetExpiry::Ex(v)) => match (v * 1000).checked_add(now) {
                Some(t) if t > 0 => Some(t),
                _ => return invalid(),
            },
            Some(SetExpiry::Px(v)) => match v.checked_add(now) {
                Some(t) if t > 0 => Some(t),
                _ => return invalid(),
            },
            Some(SetExpiry::ExAt(v)) => Some(v * 1000),
            Some(SetExpiry::PxAt(v)) => Some(v),
        };
        // (found, old TTL, GET's reply): the old value is copied only when GET asks for it.
        let (found, old_ttl, old_reply) = match self.lookup(key, now) {
            None => (false, None, Reply::Nil),
            Some(Entry {
                value: Value::Str(v),
                expire_at_ms,
            }) => (
                true,
                *expire_at_ms,
                if get {
                    Reply::Bulk(v.to_vec())
                } else {
                    Reply::Nil
                },
            ),
            Some(Entry {
                value: Value::List(_),
                expire_at_ms,
            }) => {
                if get {
                    return Reply::err(WRONGTYPE);
                }
                (true, *expire_at_ms, Reply::Nil)
            }
        };
        if (cond == Some(SetCond::Nx) && found) || (cond == Some(SetCond::Xx) && !found) {
            return old_reply;
        }
        let keep = if expiry == Some(SetExpiry::KeepTtl) {
            old_ttl
        } else {
            None
        };
        let entry = Entry {
            value: Value::Str(value.clone()),
            expire_at_ms: expire_at.or(keep),
        };
        let replaced = self.keyspace.insert(key.clone(), entry);
        if let Some(prev) = replaced
            && !matches!(&prev.value, Value::Str(v) if v == value)
        {
            self.note_removed(key, &prev, Removal::Overwritten, by);
        }
        self.note_written(key, by);
        if get { old_reply } else { Reply::Ok }
    }

    fn expire(
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
        let is_replica = self.read_only_replica;
        let Some(entry) = self.lookup(key, now) else {
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
        }
        Reply::Int(1)
    }

    fn incr(&mut self, now: i64, key: &Bytes, delta: i64, by: Option<ProcId>) -> Reply {
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
        Reply::Int(next)
    }

    fn eval(
        &mut self,
        now: i64,
        script: &ScriptRef,
        keys: &[Bytes],
        args: &[Bytes],
        read_only: bool,
        by: Option<ProcId>,
    ) -> Reply {
        let (sha, source) = match script {
            ScriptRef::Source(s) => (s.sha, s.source.clone()),
            ScriptRef::Sha(None) => return Reply::err(NOSCRIPT),
            ScriptRef::Sha(Some(sha)) => match self.scripts.get(sha) {
                Some(src) => (*sha, src.clone()),
                None => return Reply::err(NOSCRIPT),
            },
        };
        let native = native_script(&sha);
        let cached = matches!(script, ScriptRef::Sha(_));
        if let Some(n) = native
            && n.fits(keys, args)
        {
            if !cached {
                self.scripts.entry(sha).or_insert(source);
            }
            return self.run_native(now, n, &sha, keys, args, read_only, by);
        }
        let lua = self.lua.take().unwrap_or_default();
        if native.is_none()
            && let Err(e) = lua.compile(&source)
        {
            self.lua = Some(lua);
            return Reply::Error(e);
        }
        self.scripts.entry(sha).or_insert_with(|| source.clone());
        let sha_hex = hex(&sha);
        let ctx = InScript { read_only };
        // The Lua bridge speaks plain byte vectors (a rare path: lock scripts run natively).
        let keys: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
        let reply = lua.run(&source, &sha_hex, &keys, &args, &mut |argv, _raise| {
            self.script_call(now, argv, by, ctx)
        });
        self.lua = Some(lua);
        reply
    }

    /// `redis.call` from a Lua script.
    fn script_call(
        &mut self,
        now: i64,
        argv: &[Vec<u8>],
        by: Option<ProcId>,
        ctx: InScript,
    ) -> Reply {
        let cmd = match Command::parse(argv) {
            Ok(c) => c,
            Err(e) => return e.script_reply(),
        };
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        if crate::proto::command::is_denied_in_scripts(&name) {
            return Reply::err("ERR This Redis command is not allowed from script");
        }
        if cmd.is_write() {
            if ctx.read_only {
                return Reply::err("ERR Write commands are not allowed from read-only scripts.");
            }
            if self.read_only_replica {
                return Reply::err(READONLY);
            }
        }
        self.exec(now, &cmd, Caller { proc: by }, Some(ctx))
    }

    /// The lock scripts as native Rust, with Redis's exact replies and errors.
    #[allow(clippy::too_many_arguments)]
    fn run_native(
        &mut self,
        now: i64,
        n: NativeScript,
        sha: &[u8; 20],
        keys: &[Bytes],
        args: &[Bytes],
        read_only: bool,
        by: Option<ProcId>,
    ) -> Reply {
        let key = &keys[0];
        let matches = match self.lookup(key, now) {
            None => false,
            Some(Entry {
                value: Value::Str(v),
                ..
            }) => *v == args[0],
            Some(_) => return suffixed(WRONGTYPE, &hex(sha)),
        };
        if !matches {
            return Reply::Int(0);
        }
        let write_refused = if read_only {
            Some("ERR Write commands are not allowed from read-only scripts.")
        } else if self.read_only_replica {
            Some(READONLY)
        } else {
            None
        };
        match n {
            NativeScript::Unlock => {
                if let Some(e) = write_refused {
                    return suffixed(e, &hex(sha));
                }
                self.remove_key(key, Removal::Del, by);
                Reply::Int(1)
            }
            NativeScript::Extend => {
                let Some(ms) = parse_i64_strict(&args[1]) else {
                    return suffixed(ERR_NOT_INTEGER, &hex(sha));
                };
                if let Some(e) = write_refused {
                    return suffixed(e, &hex(sha));
                }
                match self.expire(now, ExpireKind::PExpire, key, ms, ExpireCond::default(), by) {
                    Reply::Error(e) => suffixed(&e, &hex(sha)),
                    r => r,
                }
            }
        }
    }

    /// Handles one request: executes it or parks it (WAIT). Returns the reply to send now.
    pub fn handle(
        &mut self,
        now_ms: i64,
        now_mono_ns: u64,
        from: ProcId,
        id: u64,
        cmd: &Command,
    ) -> Option<Reply> {
        if let Command::Wait {
            replicas,
            timeout_ms,
        } = cmd
            && *replicas > 0
            && !self.read_only_replica
        {
            // No replica can ever ack (replication is not modelled yet): block until timeout.
            let deadline =
                (*timeout_ms > 0).then(|| now_mono_ns + (*timeout_ms as u64) * NS_PER_MS);
            self.waiters.push(Waiter {
                client: from,
                id,
                deadline_mono_ns: deadline,
            });
            return None;
        }
        Some(self.execute(now_ms, cmd, Caller { proc: Some(from) }))
    }

    /// The cron tick: active expiry, WAIT timeouts. Returns replies for unblocked waiters.
    pub fn cron(&mut self, now_ms: i64, now_mono_ns: u64) -> Vec<(ProcId, u64, Reply)> {
        self.active_expire_cycle(now_ms);
        let mut done = Vec::new();
        self.waiters.retain(|w| {
            let expired = w.deadline_mono_ns.is_some_and(|d| now_mono_ns >= d);
            if expired {
                done.push((w.client, w.id, Reply::Int(0)));
            }
            !expired
        });
        done
    }

    /// Restart: the keyspace survives only with `keep_data` (persistence is modelled later);
    /// the script cache never does.
    pub fn restart(&mut self, keep_data: bool) {
        if !keep_data {
            self.keyspace.clear();
        }
        self.scripts.clear();
        self.lua = None;
        self.waiters.clear();
        self.active_expire = true;
    }

    /// SHA1 of a script source, lower-case hex (SCRIPT LOAD's reply).
    pub fn script_sha_hex(source: &[u8]) -> String {
        hex(&sha1_of(source))
    }
}

/// The node as a process of the event loop.
pub struct RedisProcess {
    pub node: RedisNode,
}

impl RedisProcess {
    pub fn new(config: RedisConfig) -> RedisProcess {
        RedisProcess {
            node: RedisNode::new(config),
        }
    }
    fn flush_observations(&mut self, cx: &mut Cx<'_>) {
        for o in self.node.drain_observations() {
            cx.observe(o);
        }
    }
}

impl Process for RedisProcess {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        cx.set_timer(CRON_PERIOD_NS, TIMER_CRON);
    }

    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        if let Msg::Request { id, cmd } = msg {
            let reply = self.node.handle(cx.wall_ms, cx.mono_ns, from, id, &cmd);
            self.flush_observations(cx);
            if let Some(reply) = reply {
                cx.send(from, Msg::Reply { id, reply });
            }
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        if tag == TIMER_CRON {
            for (to, id, reply) in self.node.cron(cx.wall_ms, cx.mono_ns) {
                cx.send(to, Msg::Reply { id, reply });
            }
            self.flush_observations(cx);
            cx.set_timer(CRON_PERIOD_NS, TIMER_CRON);
        }
    }

    fn on_restart(&mut self, keep_data: bool) {
        self.node.restart(keep_data);
    }
}
