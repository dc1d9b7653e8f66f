//! A Redis 7.0 server as a sans-IO process: executes typed commands against its keyspace at
//! the node's wall-clock time, runs scripts atomically with time frozen, expires keys lazily
//! and in a 100 ms active cycle, and reports key removals to the history.

use std::collections::BTreeMap;

use crate::history::{Observation, Removal};
use crate::process::{Cx, Process, SkippedTicks, TickDue};
use crate::proto::command::{
    ERR_NOT_INTEGER, ExpireCond, ExpireKind, ScriptRef, SetCond, hex, parse_i64_strict, sha1_of,
};
use crate::proto::reply::NOSCRIPT;
use crate::proto::{Bytes, Command, Msg, Reply, Script};
use crate::redis::blocked::Blocking;
use crate::redis::functions::FunctionStore;
use crate::redis::keyspace::{
    DICT_INITIAL_SLOTS, DbTables, ELEMENT_OVERHEAD_BYTES, Entry, Keyspace, Value, glob_match,
};
use crate::redis::lua::LuaEngine;
use crate::redis::node::connection::{Conn, ConnId, DATABASES, is_connection_command};
use crate::redis::node::pubsub::{PubSub, SubKind, subscribed_mode_error};
use crate::redis::replication::{Disk, ReplState, Role};

mod blocking;
pub mod connection;
pub mod cron;
mod functions;
mod handshake;
mod hashes;
pub mod info;
mod keycmds;
pub mod pubsub;
mod replicate;
mod strings;
use crate::redis::scripts::{NativeScript, ScriptCache, native_script, native_script_slot};
use crate::rng::Prng;
use crate::time::{NS_PER_MS, ProcId};

pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const READONLY: &str = "READONLY You can't write against a read only replica.";

pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
/// Redis's reply to a command that may grow memory when used memory is past `maxmemory`.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
/// The memory cap of every simulated node: the weight of its keys and values in all its
/// databases (`Keyspace::used_bytes`). Past it, the commands Redis flags `denyoom` get
/// [`OOM`] (as from a server with `maxmemory` set and `noeviction`), so that a script or a
/// corpus that grows a value without end stops with a reply instead of exhausting the
/// machine. One command may still go past it by its own size, as in Redis (the check is
/// made before the command). docs/model-format.md says so (its limits).
pub const MAX_USED_MEMORY_BYTES: u64 = 256 << 20;
const ERR_OVERFLOW: &str = "ERR increment or decrement would overflow";

/// Period of the server cron (hz 10) on the node's monotonic clock.
pub const CRON_PERIOD_NS: u64 = 100 * NS_PER_MS;
/// ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP (expire.c:107, effort 1): keys sampled per round of the
/// cycle; the fill stop is checked before each round.
pub const ACTIVE_EXPIRE_KEYS_PER_LOOP: usize = 20;
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
    /// This node's name (the host other nodes use in REPLICAOF, and ROLE shows).
    pub name: Bytes,
    /// Names of the other nodes, to resolve `REPLICAOF host port`.
    pub peers: Vec<(Bytes, ProcId)>,
    /// Start as a replica of this node (a full sync follows at start).
    pub replica_of: Option<ProcId>,
    /// `min-replicas-to-write` (0: off).
    pub min_replicas_to_write: u32,
    /// `min-replicas-max-lag`, seconds.
    pub min_replicas_max_lag_s: u64,
    /// Propagate TTLs in the pre-7.0 relative form (`PX ttl`, `PEXPIRE`) instead of absolute
    /// times: a replica's deadline is then its apply time plus the TTL.
    pub relative_ttl_propagation: bool,
    pub persistence: Persistence,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            observe_keys: true,
            name: Bytes::from("redis"),
            peers: Vec::new(),
            replica_of: None,
            min_replicas_to_write: 0,
            min_replicas_max_lag_s: 10,
            relative_ttl_propagation: false,
            persistence: Persistence::None,
        }
    }
}

/// What survives a crash (redis.conf `save`, `appendonly`, `appendfsync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persistence {
    /// No RDB, no AOF: a restarted node comes back empty.
    None,
    /// RDB snapshots every `every_ns` of node time.
    Rdb { every_ns: u64 },
    /// Append-only file with its fsync policy.
    Aof(Fsync),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    /// `appendfsync always`: durable before the reply.
    Always,
    /// `appendfsync everysec`: fsync once a second.
    EverySec,
    /// `appendfsync no`: the OS flushes, about every 30 s.
    No,
}

/// A client blocked in WAIT.
#[derive(Clone, Debug)]
struct Waiter {
    client: ProcId,
    id: u64,
    /// Node monotonic ns at which the timeout passes; `None` = wait forever.
    deadline_mono_ns: Option<u64>,
    /// Replicas it waits for, and the offset they must have acked (its last write).
    replicas: usize,
    woff: u64,
}

/// The server's state.
#[derive(Clone, Debug)]
pub struct RedisNode {
    pub config: RedisConfig,
    /// The database being executed in; between commands always db 0 (connection.rs).
    pub keyspace: Keyspace,
    /// Dbs 0..16 other than the one in `keyspace` (whose slot holds an empty placeholder);
    /// an empty vector until a connection first selects another db.
    // Invariant: empty or DATABASES long; `other_dbs[cur_db]` is empty.
    pub(crate) other_dbs: Vec<Keyspace>,
    // Invariant: 0 between commands.
    pub(crate) cur_db: u8,
    /// Connections with state (a selected db, a MULTI, WATCHes); the others are default.
    pub(crate) conns: BTreeMap<ConnId, Conn>,
    scripts: ScriptCache,
    lua: Option<LuaEngine>,
    /// FUNCTION LOAD's libraries (node/functions.rs).
    pub(crate) functions: FunctionStore,
    active_expire: bool,
    /// Sizes of the keys and expires tables (what the expire cycle's fill stop reads).
    tables: DbTables,
    pub(crate) role: Role,
    pub(crate) repl: ReplState,
    pub(crate) disk: Disk,
    waiters: Vec<Waiter>,
    /// Clients blocked in BLPOP (blocking.rs).
    pub(crate) blocking: Blocking,
    /// The last client id given out (handshake.rs); a new process starts again at 1.
    pub(crate) next_client_id: u64,
    /// Observations produced while executing; drained into the loop by the process wrapper.
    pub(crate) pending: Vec<Observation>,
    /// Channel and pattern subscriptions (lost on a crash).
    pub(crate) pubsub: PubSub,
    /// Since the cron last took this flag, a command propagated an effect or ran a Lua
    /// script, or the process handled a message other than a lock command on its fast path
    /// (see `on_message`): what the cron plans from (a deadline, the dbs, the replicas) may
    /// have moved.
    pub(crate) wrote: bool,
    /// Commands refused with [`OOM`] for the memory cap: a conformance case that met it went
    /// past the simulator's limits, which is bad input there, not a divergence from Redis.
    pub memory_refusals: u64,
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
            keyspace: Keyspace::new(),
            other_dbs: Vec::new(),
            cur_db: 0,
            conns: BTreeMap::new(),
            scripts: ScriptCache::default(),
            lua: None,
            functions: FunctionStore::default(),
            active_expire: true,
            tables: DbTables::default(),
            role: Role::Master,
            repl: ReplState::default(),
            disk: Disk::default(),
            waiters: Vec::new(),
            blocking: Blocking::default(),
            next_client_id: 0,
            pending: Vec::new(),
            pubsub: PubSub::default(),
            wrote: false,
            memory_refusals: 0,
            config,
        }
    }

    /// A replica: refuses client writes, never expires keys by itself.
    pub fn is_replica(&self) -> bool {
        matches!(self.role, Role::Replica { .. })
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

    /// Looks a key up applying lazy expiry: an expired key is deleted and the DEL propagated
    /// (a master) or hidden (a replica, which never deletes by itself). Commands from the
    /// master's stream see keys as they are (Redis's `expireIfNeeded` for the master client).
    fn lookup(&mut self, key: &[u8], now_ms: i64) -> Option<&Entry> {
        let i = self.lookup_index(key, now_ms)?;
        Some(self.keyspace.at(i))
    }

    /// `lookup` for a command that changes the entry it finds.
    fn lookup_mut(&mut self, key: &[u8], now_ms: i64) -> Option<&mut Entry> {
        let i = self.lookup_index(key, now_ms)?;
        Some(self.keyspace.at_mut(i))
    }

    /// `lookup`, giving the key's position: a command that goes on to replace or remove the
    /// key does so there, without hashing and probing for it again.
    #[inline(always)]
    fn lookup_index(&mut self, key: &[u8], now_ms: i64) -> Option<usize> {
        let i = self.keyspace.index_of(key)?;
        self.live_at(i, now_ms)
    }

    /// `lookup_index` of a key held as `Bytes` (the lock commands' own): the one-key case
    /// compares the two strings as `Bytes` do.
    #[inline(always)]
    fn lookup_index_bytes(&mut self, key: &Bytes, now_ms: i64) -> Option<usize> {
        let (i, entry) = self.keyspace.find_bytes(key)?;
        if entry.is_expired(now_ms) && !self.repl.applying_master_stream {
            self.expire_found(i);
            return None;
        }
        Some(i)
    }

    /// The rest of a lookup that found the key at `i`: `Some(i)` unless it is expired.
    #[inline(always)]
    fn live_at(&mut self, i: usize, now_ms: i64) -> Option<usize> {
        // The entry is read whatever the flag says: the caller reads it at `i` next, and
        // with this read dominating it, that one needs no bounds check of its own.
        let expired = self.keyspace.at(i).is_expired(now_ms);
        if expired && !self.repl.applying_master_stream {
            self.expire_found(i);
            return None;
        }
        Some(i)
    }

    /// Lazy expiry of the key at `i`, found expired by a lookup.
    #[inline(never)]
    fn expire_found(&mut self, i: usize) {
        if !self.is_replica()
            && let Some((k, e)) = self.keyspace.remove_at(i)
        {
            self.note_removed(&k, &e, Removal::Expired, None);
            self.propagate(|| Command::Del(vec![k]));
        }
    }

    /// Removal ordered by the master's stream.
    pub(crate) fn remove_replicated(&mut self, key: &[u8]) {
        if let Some((k, e)) = self.keyspace.remove(key) {
            self.note_removed(&k, &e, Removal::Del, None);
            self.touch_key(&k);
        }
    }

    pub(crate) fn exec_for_replication(
        &mut self,
        now_ms: i64,
        cmd: &Command,
        caller: Caller,
    ) -> Reply {
        self.exec(now_ms, cmd, caller, None)
    }

    fn remove_key(&mut self, key: &[u8], how: Removal, by: Option<ProcId>) -> bool {
        match self.keyspace.remove(key) {
            Some((k, e)) => {
                self.note_removed(&k, &e, how, by);
                if how != Removal::Flushed {
                    self.propagate(|| Command::Del(vec![k]));
                }
                true
            }
            None => false,
        }
    }

    /// `remove_key` for a key `lookup_index` found at `i`.
    fn remove_key_at(&mut self, i: usize, how: Removal, by: Option<ProcId>) {
        if let Some((k, e)) = self.keyspace.remove_at(i) {
            self.note_removed(&k, &e, how, by);
            if how != Removal::Flushed {
                self.propagate(|| Command::Del(vec![k]));
            }
        }
    }

    /// One active expire cycle, as the cron runs it every 100 ms, and the table resizing
    /// that follows it. Redis 7.0.15's `activeExpireCycle` (expire.c): a key goes when
    /// `now > t` (:56, the lazy rule too); before each round of 20 samples (:107, :206-224)
    /// the cycle stops when the expires table is under 1 % full (`slots >
    /// DICT_HT_INITIAL_SIZE && num*100/slots < 1`), leaving the rest for a cycle after the
    /// table shrank. Rounds here take due keys only (Redis samples buckets, due or not, and
    /// also stops when a round finds ≤ 10 % expired); the cap stands for its CPU time limit.
    pub fn active_expire_cycle(&mut self, now_ms: i64) {
        let expiring = self.active_expire && !self.is_replica();
        let limit = if expiring {
            ACTIVE_EXPIRE_KEYS_PER_CYCLE
        } else {
            0
        };
        let (due, with_ttl) = self.keyspace.expiry_scan(now_ms, limit);
        self.tables.keys.holds(self.keyspace.len() as u64);
        self.tables.expires.holds(with_ttl);
        let mut num = with_ttl;
        for round in due.chunks(ACTIVE_EXPIRE_KEYS_PER_LOOP) {
            let slots = self.tables.expires.slots();
            if slots > DICT_INITIAL_SLOTS && num * 100 / slots < 1 {
                break;
            }
            for key in round {
                if self.remove_key(key, Removal::Expired, None) {
                    num -= 1;
                }
            }
        }
        self.tables
            .after_expire_cycle(self.keyspace.len() as u64, num);
        if self.other_dbs.is_empty() || !expiring {
            return;
        }
        // Dbs 1..16 (no model uses them yet): due keys go by the same `now > t` rule, without
        // the fill-based stop, which the tables above model for db 0 only.
        for d in self.used_dbs().into_iter().skip(1) {
            self.switch_db(d);
            let (due, _) = self
                .keyspace
                .expiry_scan(now_ms, ACTIVE_EXPIRE_KEYS_PER_CYCLE);
            for key in &due {
                self.remove_key(key, Removal::Expired, None);
            }
            self.switch_db(0);
        }
    }

    /// Executes one command at wall time `now_ms`. `None` means the client is blocked (WAIT)
    /// and will be answered later by the cron.
    #[inline]
    pub fn execute(&mut self, now_ms: i64, cmd: &Command, caller: Caller) -> Reply {
        if caller.proc.is_none()
            && self.pubsub.is_subscribed(None)
            && let Some(reply) = subscribed_mode_reply(cmd)
        {
            if matches!(cmd, Command::Exec) {
                return self.abort_exec(None, &reply);
            }
            return reply;
        }
        if !self.conns.is_empty() || is_connection_command(cmd) {
            return self.execute_conn(now_ms, cmd, caller);
        }
        self.execute_plain(now_ms, cmd, caller)
    }

    /// A command of a connection outside MULTI, in the db already switched to.
    #[inline]
    pub(crate) fn execute_plain(&mut self, now_ms: i64, cmd: &Command, caller: Caller) -> Reply {
        // The lock commands go straight to their implementation (`exec`'s arms for them,
        // without the call through its whole match: ~50 instructions a command).
        match cmd {
            Command::Set { .. } => self.execute_set(now_ms, cmd, caller.proc),
            Command::Eval { .. } => self.execute_eval(now_ms, cmd, caller.proc),
            Command::FCall { .. } => self.execute_fcall(now_ms, cmd, caller),
            _ => {
                if let Some(refusal) = self.refused_as_write(cmd) {
                    return refusal;
                }
                let reply = match cmd {
                    Command::BLPop { keys, timeout } => {
                        self.blpop(now_ms, keys, timeout, caller.proc, true)
                    }
                    _ => self.exec(now_ms, cmd, caller, None),
                };
                self.flush_effects(caller.proc, false);
                self.serve_ready(now_ms);
                reply
            }
        }
    }

    /// The weight of the node's keys and values, all databases.
    pub fn used_memory(&self) -> u64 {
        self.keyspace.used_bytes() + self.other_dbs.iter().map(Keyspace::used_bytes).sum::<u64>()
    }

    /// [`OOM`] for a command that may grow memory while the node is past its cap (the check
    /// of Redis's processCommand, and of `redis.call` in a script). Commands from the
    /// master's stream are never refused (`exec_for_replication` does not ask).
    #[inline]
    fn refused_for_memory(&mut self, cmd: &Command) -> Option<Reply> {
        (cmd.may_grow_memory() && self.used_memory() > MAX_USED_MEMORY_BYTES).then(|| {
            self.memory_refusals += 1;
            Reply::err(OOM)
        })
    }

    /// `handle` of a SET (`cmd`) from a client on a connection without state, and the
    /// reply sent: the process calls it directly. The reply is made where the message
    /// takes it, in this frame (returned, it was copied on the way).
    #[inline(never)]
    pub(crate) fn answer_set(&mut self, cx: &mut Cx<'_>, from: ProcId, id: u64, cmd: &Command) {
        self.repl.mono_ns = cx.mono_ns;
        let reply = self.execute_set(cx.wall_ms, cmd, Some(from));
        cx.send(from, Msg::Reply { id, reply });
    }

    /// `answer_set` of an EVAL.
    #[inline(never)]
    pub(crate) fn answer_eval(&mut self, cx: &mut Cx<'_>, from: ProcId, id: u64, cmd: &Command) {
        self.repl.mono_ns = cx.mono_ns;
        let reply = self.execute_eval(cx.wall_ms, cmd, Some(from));
        cx.send(from, Msg::Reply { id, reply });
    }

    /// `execute_plain` of a SET (`cmd`).
    #[inline(always)]
    pub(crate) fn execute_set(&mut self, now_ms: i64, cmd: &Command, by: Option<ProcId>) -> Reply {
        let Command::Set {
            key,
            value,
            cond,
            get,
            expiry,
        } = cmd
        else {
            unreachable!("execute_set of another command");
        };
        if self.is_replica() {
            return Reply::err(READONLY);
        }
        if !self.enough_good_replicas() {
            return Reply::err(NOREPLICAS);
        }
        if let Some(r) = self.refused_for_memory(cmd) {
            return r;
        }
        let reply = self.set(now_ms, key, value, *cond, *get, *expiry, by);
        self.flush_effects(by, false);
        reply
    }

    /// `execute_plain` of an EVAL (`cmd`), as `execute_set` is of a SET. EVAL is not a
    /// write for processCommand's refusals (a script's own writes are checked when made).
    #[inline(always)]
    pub(crate) fn execute_eval(&mut self, now_ms: i64, cmd: &Command, by: Option<ProcId>) -> Reply {
        let Command::Eval {
            script,
            keys,
            args,
            read_only,
        } = cmd
        else {
            unreachable!("execute_eval of another command");
        };
        let reply = self.eval(now_ms, script, keys, args, *read_only, by);
        // A script's effects are one unit (MULTI/EXEC around more than one).
        self.flush_effects(by, true);
        self.serve_ready(now_ms);
        reply
    }

    /// A queued command as EXEC runs it (processCommand's checks were made when queueing).
    pub(crate) fn exec_in_transaction(&mut self, now: i64, cmd: &Command, caller: Caller) -> Reply {
        // The memory cap, unlike the other checks, holds at each command: a transaction of
        // RPUSHes must not grow without end either.
        if let Some(r) = self.refused_for_memory(cmd) {
            return r;
        }
        self.exec(now, cmd, caller, None)
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
            Command::Persist(k) => match self.lookup_mut(k, now) {
                Some(e) if e.expire_at_ms.is_some() => {
                    e.expire_at_ms = None;
                    self.propagate(|| Command::Persist(k.clone()));
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
                self.scripts.insert(script.sha, &script.source);
                Reply::Bulk(script.sha_hex().into_bytes())
            }
            Command::ScriptExists(shas) => Reply::Array(
                shas.iter()
                    .map(|s| {
                        let known = crate::proto::command::parse_sha_hex(s)
                            .is_some_and(|sha| self.scripts.contains(&sha));
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
                self.touch_flushed(None);
                self.flush_current_db(by);
                if !self.other_dbs.is_empty() {
                    let here = self.cur_db;
                    for d in 0..DATABASES as u8 {
                        if d != here && self.db_ref(d).is_some_and(|ks| !ks.is_empty()) {
                            self.switch_db(d);
                            self.flush_current_db(by);
                        }
                    }
                    self.switch_db(here);
                }
                self.propagate(|| Command::FlushAll);
                Reply::Ok
            }
            Command::FlushDb => {
                self.touch_flushed(Some(self.cur_db));
                self.flush_current_db(by);
                self.propagate(|| Command::FlushDb);
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
            Command::RPush(k, vals) => {
                let reply = match self.lookup_mut(k, now) {
                    Some(Entry {
                        value: Value::List(l),
                        ..
                    }) => {
                        l.extend(vals.iter().cloned());
                        let n = l.len() as i64;
                        let grew: u64 = vals
                            .iter()
                            .map(|b| ELEMENT_OVERHEAD_BYTES + b.len() as u64)
                            .sum();
                        self.keyspace.resized(grew as i64);
                        Reply::Int(n)
                    }
                    Some(_) => return Reply::err(WRONGTYPE),
                    None => {
                        let entry = Entry {
                            value: Value::List(vals.clone()),
                            expire_at_ms: None,
                        };
                        self.keyspace.insert(k.clone(), entry);
                        self.signal_list_added(k);
                        Reply::Int(vals.len() as i64)
                    }
                };
                self.propagate(|| cmd.clone());
                reply
            }
            Command::DebugSetActiveExpire(on) => {
                self.active_expire = *on;
                Reply::Ok
            }
            Command::ReplicaOf(target) => self.replica_of(target.as_ref()),
            Command::Wait { .. } => {
                if self.is_replica() {
                    return Reply::err(
                        "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
                    );
                }
                // Blocking WAITs are parked by `handle`; here the count reached now.
                Reply::Int(self.acked_replicas(caller.proc) as i64)
            }
            Command::Role => self.role_reply(),
            Command::HSet(key, pairs) => self.hset(now, key, pairs, cmd, by),
            Command::HGet(..)
            | Command::HExists(..)
            | Command::HGetAll(_)
            | Command::HLen(_)
            | Command::HMGet(..) => self.hash_read(now, cmd),
            Command::HIncrBy(key, field, delta) => self.hincrby(now, key, field, *delta, by),
            Command::HIncrByFloat(key, field, raw) => self.hincrbyfloat(now, key, field, raw, by),
            Command::HDel(key, fields) => self.hdel(now, key, fields, cmd, by),
            Command::GetDel(key) => match self.lookup(key, now) {
                None => Reply::Nil,
                Some(Entry {
                    value: Value::Str(v),
                    ..
                }) => {
                    let old = Reply::Bulk(v.to_vec());
                    // Redis 7.0 rewrites GETDEL as `DEL key` for replicas and the AOF.
                    self.remove_key(key, Removal::Del, by);
                    old
                }
                Some(_) => Reply::err(WRONGTYPE),
            },
            Command::GetEx(key, opt) => self.getex(now, key, opt, by),
            Command::Time => {
                // The node's wall clock, which is all the model has at ms resolution.
                Reply::Array(vec![
                    Reply::Bulk(now.div_euclid(1000).to_string().into_bytes()),
                    Reply::Bulk((now.rem_euclid(1000) * 1000).to_string().into_bytes()),
                ])
            }
            Command::Publish(channel, message) => {
                // Redis (no cluster) forces PUBLISH into the replication stream, so replicas'
                // subscribers hear it too (pubsub.rs).
                self.propagate(|| cmd.clone());
                self.publish(channel, message)
            }
            Command::Subscribe { names, pattern } => {
                self.subscription(by, sub_kind(*pattern), true, names)
            }
            Command::Unsubscribe { names, pattern } => {
                self.subscription(by, sub_kind(*pattern), false, names)
            }
            // A connection's SELECT is handled in connection.rs; here one inside a script,
            // which lasts until the script ends (`eval` restores the caller's db).
            Command::Select(d) => match u8::try_from(*d) {
                Ok(d) if usize::from(d) < DATABASES => {
                    self.switch_db(d);
                    Reply::Ok
                }
                _ => Reply::err("ERR DB index is out of range"),
            },
            // UNWATCH queued in a MULTI: the watches are gone by the time it runs.
            Command::Unwatch => Reply::Ok,
            // Reached only from scripts, which may not call them (script_call refuses first).
            Command::Multi | Command::Exec | Command::Discard | Command::Watch(_) => {
                Reply::err("ERR This Redis command is not allowed from script")
            }
            Command::StrLen(key) => self.strlen(now, key),
            Command::Append(key, tail) => self.append(now, key, tail, cmd, by),
            Command::SetRange(key, offset, patch) => {
                match crate::proto::command::setrange_offset(offset) {
                    Ok(offset) => self.setrange(now, key, offset, patch, cmd, by),
                    Err(e) => e.client_reply(),
                }
            }
            Command::Rename { keys, nx } => self.rename(now, keys, *nx, cmd, by),
            Command::Copy { keys, opts } => match crate::proto::command::copy_options(opts) {
                Ok((db, replace)) => self.copy(now, keys, db, replace, cmd, by),
                Err(e) => e.client_reply(),
            },
            Command::ObjectEncoding(key) => self.object_encoding(now, key),
            Command::Echo(m) => Reply::Bulk(m.to_vec()),
            Command::HKeys(key) => self.hash_column(now, key, true),
            Command::HVals(key) => self.hash_column(now, key, false),
            Command::HSetNx(key, field, value) => self.hsetnx(now, key, field, value, cmd, by),
            Command::HStrLen(key, field) => self.hstrlen(now, key, field),
            Command::HMSet(key, pairs) => match self.hset(now, key, pairs, cmd, by) {
                Reply::Int(_) => Reply::Ok,
                other => other,
            },
            Command::LPush(key, vals) => self.lpush(now, key, vals, cmd, by),
            Command::LPop(key, rest) => match crate::proto::command::lpop_count(rest) {
                Ok(count) => self.lpop(now, key, count, cmd, by),
                Err(e) => e.client_reply(),
            },
            Command::LLen(key) => self.llen(now, key),
            Command::ClusterReadMode(_) => Self::cluster_read_mode(),
            Command::Auth { user, .. } => Self::auth(user.as_ref()),
            Command::RandomKey => self.random_key(now),
            Command::Move { key, db } => self.move_key(now, key, db, cmd, by),
            Command::SwapDb(ids) => self.swapdb(now, ids, cmd),
            Command::Info(sections) => self.info(now, sections),
            // A connection's commands (connection.rs runs them with its state); scripts
            // may not call them.
            Command::Hello(_) | Command::Client(_) => {
                Reply::err("ERR This Redis command is not allowed from script")
            }
            // Queued in a transaction (scripts may not call it): never blocks.
            Command::BLPop { keys, timeout } => self.blpop(now, keys, timeout, by, false),
            Command::Function(sub) => self.function_cmd(sub, cmd),
            Command::FCall { .. } => self.fcall(now, cmd, by, in_script.is_some()),
        }
    }

    fn flush_current_db(&mut self, by: Option<ProcId>) {
        let keys: Vec<Bytes> = self.keyspace.iter().map(|(k, _)| k.clone()).collect();
        for k in keys {
            self.remove_key(&k, Removal::Flushed, by);
        }
    }

    // Inline in `execute_eval`: one frame for an unlock, not two (its eight arguments
    // marshalled on the stack, its six saved registers).
    #[inline(always)]
    fn eval(
        &mut self,
        now: i64,
        script: &ScriptRef,
        keys: &[Bytes],
        args: &[Bytes],
        read_only: bool,
        by: Option<ProcId>,
    ) -> Reply {
        // The lock scripts first: recognised by SHA1 (no shebang: their flags are EVAL's
        // own, so nothing below the lookup could refuse them earlier), run natively, and
        // cached without touching the map once they are.
        let sha_of_ref = match script {
            ScriptRef::Source(s) => Some(&s.sha),
            ScriptRef::Sha(sha) => sha.as_ref(),
        };
        if let Some(sha) = sha_of_ref
            && let Some((slot, n)) = native_script_slot(sha)
            && n.fits(keys, args)
        {
            match script {
                ScriptRef::Source(s) => self.scripts.insert_native(slot, sha, &s.source),
                ScriptRef::Sha(_) if !self.scripts.contains_native(slot, sha) => {
                    return Reply::err(NOSCRIPT);
                }
                ScriptRef::Sha(_) => {}
            }
            return self.run_native(now, n, sha, keys, args, read_only, by);
        }
        self.eval_lua(now, script, keys, args, read_only, by)
    }

    /// EVAL of any script but the native lock scripts.
    #[inline(never)]
    fn eval_lua(
        &mut self,
        now: i64,
        script: &ScriptRef,
        keys: &[Bytes],
        args: &[Bytes],
        read_only: bool,
        by: Option<ProcId>,
    ) -> Reply {
        // A script can change what the cron plans from without an effect (a SELECT makes
        // the other dbs): counted as a write for that.
        self.wrote = true;
        let (sha, source) = match script {
            ScriptRef::Source(s) => (s.sha, s.source.clone()),
            ScriptRef::Sha(None) => return Reply::err(NOSCRIPT),
            ScriptRef::Sha(Some(sha)) => match self.scripts.get(sha) {
                Some(src) => (*sha, src.clone()),
                None => return Reply::err(NOSCRIPT),
            },
        };
        // A valid `#!lua` shebang without `no-writes` makes EVAL a write command, refused
        // before the script is even compiled (Redis's processCommand); a bad shebang leaves
        // EVAL's own flags and fails at compile time below. No shebang: eval compat mode.
        let declared = crate::redis::lua::shebang_flags(&source).unwrap_or(None);
        let may_write = declared.is_some_and(|f| !f.no_writes);
        if may_write {
            if self.is_replica() {
                return Reply::err(READONLY);
            }
            if !self.enough_good_replicas() {
                return Reply::err(NOREPLICAS);
            }
        }
        let native = native_script(&sha);
        let lua = self.lua.take().unwrap_or_default();
        if native.is_none()
            && let Err(e) = lua.compile(&source)
        {
            self.lua = Some(lua);
            return Reply::Error(e);
        }
        self.scripts.insert(sha, &source);
        // scriptPrepareForRun: checked after compiling (a compile error wins).
        if read_only && may_write {
            return Reply::err("ERR Can not execute a script with write flag using *_ro command.");
        }
        let sha_hex = hex(&sha);
        let read_only = read_only || declared.is_some_and(|f| f.no_writes);
        let ctx = InScript { read_only };
        // The Lua bridge speaks plain byte vectors (a rare path: lock scripts run natively).
        let keys: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
        // A SELECT inside the script lasts until it ends: the caller's db comes back.
        let caller_db = self.cur_db;
        let reply = lua.run(&source, &sha_hex, &keys, &args, &mut |argv, _raise| {
            self.script_call(now, argv, by, ctx)
        });
        self.switch_db(caller_db);
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
        // Redis counts may-replicate commands (PUBLISH) as writes in read-only scripts only:
        // a replica runs a flagless script's PUBLISH.
        if ctx.read_only && (cmd.is_write() || matches!(cmd, Command::Publish(..))) {
            return Reply::err("ERR Write commands are not allowed from read-only scripts.");
        }
        if cmd.is_write() {
            if self.is_replica() {
                return Reply::err(READONLY);
            }
            if !self.enough_good_replicas() {
                return Reply::err(NOREPLICAS);
            }
            if let Some(r) = self.refused_for_memory(&cmd) {
                return r;
            }
        }
        self.exec(now, &cmd, Caller { proc: by }, Some(ctx))
    }

    /// The lock scripts as native Rust, with Redis's exact replies and errors.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
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
        // `lookup_index_bytes`, keeping the entry it found for the comparison (read again
        // by position, it was checked against the length a second time).
        let Some((i, entry)) = self.keyspace.find_bytes(key) else {
            return Reply::Int(0);
        };
        if entry.is_expired(now) && !self.repl.applying_master_stream {
            self.expire_found(i);
            return Reply::Int(0);
        }
        match &entry.value {
            Value::Str(v) if *v == args[0] => {}
            Value::Str(_) => return Reply::Int(0),
            _ => return suffixed(WRONGTYPE, &hex(sha)),
        }
        let write_refused = if read_only {
            Some("ERR Write commands are not allowed from read-only scripts.")
        } else if self.is_replica() {
            Some(READONLY)
        } else if !self.enough_good_replicas() {
            Some(NOREPLICAS)
        } else {
            None
        };
        match n {
            NativeScript::Unlock => {
                if let Some(e) = write_refused {
                    return suffixed(e, &hex(sha));
                }
                self.remove_key_at(i, Removal::Del, by);
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
    #[inline]
    pub fn handle(
        &mut self,
        now_ms: i64,
        now_mono_ns: u64,
        from: ProcId,
        id: u64,
        cmd: &Command,
    ) -> Option<Reply> {
        self.repl.mono_ns = now_mono_ns;
        if let Command::Wait {
            replicas,
            timeout_ms,
        } = cmd
            && !self.is_replica()
            && self
                .conns
                .get(&Some(from))
                .is_none_or(|c| c.queue.is_none())
            && (*replicas).max(0) as usize > self.acked_replicas(Some(from))
        {
            // Not enough acks yet: ask every replica for its offset and park the client until
            // enough ack or the timeout passes (checked on the cron tick, as Redis does).
            let deadline =
                (*timeout_ms > 0).then(|| now_mono_ns + (*timeout_ms as u64) * NS_PER_MS);
            let woff = self.repl.client_woff(from);
            self.waiters.push(Waiter {
                client: from,
                id,
                deadline_mono_ns: deadline,
                replicas: *replicas as usize,
                woff,
            });
            self.request_acks();
            return None;
        }
        let reply = self.execute(now_ms, cmd, Caller { proc: Some(from) });
        if self.park(Some(from), id) {
            return None;
        }
        Some(reply)
    }

    /// The cron tick (every 100 ms): active expiry, persistence, replication acks, WAIT
    /// timeouts. Returns replies for unblocked waiters.
    pub fn cron(&mut self, now_ms: i64, now_mono_ns: u64) -> Vec<(ProcId, u64, Reply)> {
        self.repl.mono_ns = now_mono_ns;
        self.active_expire_cycle(now_ms);
        self.flush_propagation(None);
        self.persistence_cron(now_mono_ns);
        self.replication_cron(now_mono_ns);
        self.before_sleep(now_ms);
        let mut done = Vec::new();
        if self.waiters.is_empty() {
            return done;
        }
        let counts: Vec<usize> = self.waiters.iter().map(|w| self.acked_at(w.woff)).collect();
        let mut k = 0;
        self.waiters.retain(|w| {
            let n = counts[k];
            k += 1;
            let over = w.deadline_mono_ns.is_some_and(|d| now_mono_ns >= d);
            if over || n >= w.replicas {
                done.push((w.client, w.id, Reply::Int(n as i64)));
                return false;
            }
            true
        });
        done
    }

    /// A tick the process did not make an event of (`cron::CronMode::WhenDue`), run when
    /// the node next handles anything, at its own clock readings: it moves state only.
    pub(crate) fn skipped_cron(&mut self, now_ms: i64, now_mono_ns: u64) {
        let replies = self.cron(now_ms, now_mono_ns);
        assert!(
            replies.is_empty() && self.repl.outbox.is_empty() && self.pending.is_empty(),
            "a skipped cron tick would have been seen"
        );
    }

    /// A skipped tick of this node can only move its tables, its replication ack clock and
    /// `repl.mono_ns` (no disk to write, no stream to flush, no replica, link or WAIT client,
    /// keys in db 0 only): `skipped_light_tick` does the same for less.
    pub(crate) fn cron_is_light(&self) -> bool {
        matches!(
            self.config.persistence,
            Persistence::None | Persistence::Aof(Fsync::Always)
        ) && !self.repl.dirty
            && self.role == Role::Master
            && self.repl.replicas.is_empty()
            && self.other_dbs.is_empty()
            && self.waiters.is_empty()
            && self.blocking.is_empty()
    }

    /// What skipped light ticks read: the sizes the expire cycle sees (constant between
    /// two events at the node): keys, and keys with a deadline.
    pub(crate) fn light_tick_inputs(&mut self) -> (u64, u64) {
        let with_ttl = self.keyspace.expiry_summary().1;
        (self.keyspace.len() as u64, with_ttl)
    }

    /// The tables' step of `cron` at a skipped tick of a light node (`cron_is_light`) with
    /// nothing due: the expire cycle removes nothing and leaves the resizing. Returns
    /// whether the tables changed (the same inputs give the same step: once one changes
    /// nothing, none will). The rest of such a tick is the ack clock of a master without
    /// replicas (`repl.last_ack_sent_mono_ns`) and `repl.mono_ns`, which the caller moves.
    pub(crate) fn skipped_light_tables(&mut self, (keys, with_ttl): (u64, u64)) -> bool {
        let before = self.tables;
        self.tables.keys.holds(keys);
        self.tables.expires.holds(with_ttl);
        self.tables.after_expire_cycle(keys, with_ttl);
        self.tables != before
    }

    /// The node needs every tick: its replication cron sends, or WAIT or BLPOP clients time
    /// out on it, or keys outside db 0 expire (`earliest_expiry_ms` reads db 0 only).
    #[inline]
    pub(crate) fn cron_must_tick(&self) -> bool {
        self.is_replica()
            || !self.repl.replicas.is_empty()
            || !self.waiters.is_empty()
            || self.blocking.has_deadline()
            || !self.other_dbs.is_empty()
    }

    /// The earliest deadline the active expire cycle would act on (db 0; `None`: no tick
    /// removes anything however late).
    #[inline]
    pub(crate) fn earliest_expiry_ms(&mut self) -> Option<i64> {
        if !self.active_expire || self.is_replica() {
            return None;
        }
        self.keyspace.expiry_summary().0
    }

    /// WAIT clients whose replicas have now acked enough (called on every ack).
    pub(crate) fn wake_waiters(&mut self) {
        let mut i = 0;
        while i < self.waiters.len() {
            let w = &self.waiters[i];
            let n = self.acked_at(w.woff);
            if n >= w.replicas {
                let w = self.waiters.remove(i);
                self.repl.outbox.push((
                    w.client,
                    Msg::Reply {
                        id: w.id,
                        reply: Reply::Int(n as i64),
                    },
                ));
            } else {
                i += 1;
            }
        }
    }

    /// Restart after a crash: the keyspace comes back as persistence allows (`keep_data`:
    /// the process crashed but the machine did not, so what was written to the AOF is
    /// there; otherwise a power loss: only what was fsynced or snapshotted). The script
    /// cache, blocked clients and replication links never survive. Expired keys are dropped
    /// when loading, in `on_start`, by the node's clock then.
    pub fn restart(&mut self, keep_data: bool) {
        let restored = match self.config.persistence {
            Persistence::None => Keyspace::new(),
            Persistence::Rdb { .. } => self.disk.snapshot.clone(),
            Persistence::Aof(_) if keep_data => self.keyspace.clone(),
            Persistence::Aof(_) => self.disk.snapshot.clone(),
        };
        // What the restart lost, in the history: a key that came back with another value, or
        // not at all, left this node now (the crash itself kept the keyspace in memory).
        if self.config.observe_keys {
            let lost: Vec<(Bytes, Entry)> = self
                .keyspace
                .iter()
                .filter(|(k, e)| restored.raw(k).is_none_or(|r| r.value != e.value))
                .map(|(k, e)| (k.clone(), e.clone()))
                .collect();
            for (k, e) in &lost {
                self.note_removed(k, e, Removal::Flushed, None);
            }
        }
        self.keyspace = restored;
        // The other dbs come back as db 0 does (their observations are not reported: no
        // lock model keeps its keys outside db 0).
        if !self.other_dbs.is_empty() || !self.disk.snapshot_other_dbs.is_empty() {
            self.other_dbs = match self.config.persistence {
                Persistence::None => Vec::new(),
                Persistence::Aof(_) if keep_data => std::mem::take(&mut self.other_dbs),
                _ => self.disk.snapshot_other_dbs.clone(),
            };
        }
        // Connections break with the process.
        self.conns.clear();
        self.disk.loading = true;
        self.scripts.clear();
        self.lua = None;
        // The libraries come back as the keys do (an RDB and an AOF both hold them), and
        // are compiled afresh by the new process.
        self.functions = match self.config.persistence {
            Persistence::None => FunctionStore::default(),
            Persistence::Aof(_) if keep_data => self.functions.clone(),
            _ => self.disk.snapshot_functions.clone(),
        };
        self.waiters.clear();
        self.forget_blocked();
        self.next_client_id = 0;
        // Connections die with the process: every subscriber has to subscribe again.
        self.pubsub = PubSub::default();
        self.active_expire = true;
        // A new process builds its tables afresh as it loads.
        self.tables = DbTables::default();
        self.repl.restart();
    }

    /// Finishes a restart at the node's wall time: drop keys already expired (a master does
    /// when loading) and reconnect to the master if this is a replica.
    pub fn finish_start(&mut self, now_ms: i64, now_mono_ns: u64) {
        self.repl.mono_ns = now_mono_ns;
        if std::mem::take(&mut self.disk.loading) && !self.is_replica() {
            for d in self.used_dbs() {
                self.switch_db(d);
                let expired: Vec<Bytes> = self
                    .keyspace
                    .iter()
                    .filter(|(_, e)| e.expire_at_ms.is_some_and(|t| t < now_ms))
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in expired {
                    if let Some((k, e)) = self.keyspace.remove(&k) {
                        self.note_removed(&k, &e, Removal::Expired, None);
                    }
                }
                self.switch_db(0);
            }
        }
        self.disk.snapshot_at_mono_ns = now_mono_ns;
        if let Some(m) = self.config.replica_of.take() {
            self.start_replication(m);
        } else if let Role::Replica { master, .. } = self.role {
            self.start_replication(master);
        }
    }

    /// Messages the node wants sent (replication traffic, late WAIT and BLPOP replies).
    pub fn drain_outbox(&mut self) -> std::vec::Drain<'_, (ProcId, Msg)> {
        self.repl.outbox.drain(..)
    }

    /// SHA1 of a script source, lower-case hex (SCRIPT LOAD's reply).
    pub fn script_sha_hex(source: &[u8]) -> String {
        hex(&sha1_of(source))
    }
}

fn sub_kind(pattern: bool) -> SubKind {
    if pattern {
        SubKind::Pattern
    } else {
        SubKind::Channel
    }
}

/// What a RESP2 connection in subscribed mode gets instead of running `cmd`: `None` for the
/// commands it may still send (PING is answered as an array there).
fn subscribed_mode_reply(cmd: &Command) -> Option<Reply> {
    match cmd {
        Command::Subscribe { .. } | Command::Unsubscribe { .. } => None,
        Command::Ping(m) => Some(Reply::Array(vec![
            Reply::Bulk(b"pong".to_vec()),
            Reply::Bulk(m.as_ref().map_or_else(Vec::new, |m| m.to_vec())),
        ])),
        // Redis names a container's subcommand (`script|load`); EXEC's refusal is turned
        // into an EXECABORT by the caller.
        other => Some(subscribed_mode_error(&other.full_name())),
    }
}

/// The node as a process of the event loop.
#[derive(Clone, Debug)]
pub struct RedisProcess {
    pub node: RedisNode,
    /// Draws the cron's phase at every start, from a stream of its own (`"cron-phase"`, one
    /// per node) so that no other draw of the run moves. None: the first cron comes one
    /// period after the start (tests, the corpus runner).
    cron_phase: Option<Prng>,
    /// The node's side of the cron: which ticks are events.
    cron: cron::CronState,
}

impl RedisProcess {
    pub fn new(config: RedisConfig) -> RedisProcess {
        RedisProcess {
            node: RedisNode::new(config),
            cron_phase: None,
            cron: cron::CronState::default(),
        }
    }

    /// The cron's phase relative to the process start is drawn from `rng` at every start:
    /// a real server's cron ticks at a phase arbitrary to its clients (it is set by when the
    /// process started, to the microsecond), so a key set just after the start is not
    /// removed ~100 ms after its deadline on every seed.
    pub fn with_cron_phase(mut self, rng: Prng) -> RedisProcess {
        self.cron_phase = Some(rng);
        self
    }

    /// Delay from the start to the first cron: in (0, CRON_PERIOD_NS].
    fn first_cron_ns(&mut self) -> u64 {
        match &mut self.cron_phase {
            Some(rng) => 1 + rng.below(CRON_PERIOD_NS),
            None => CRON_PERIOD_NS,
        }
    }
    /// Hands what the node produced to the loop: replication messages first (they were
    /// produced by the command whose reply follows), then observations.
    #[inline]
    fn flush(&mut self, cx: &mut Cx<'_>) {
        // Most commands produce neither: skip the two drains.
        if self.node.repl.outbox.is_empty() && self.node.pending.is_empty() {
            return;
        }
        self.flush_produced(cx);
    }

    /// A request other than a lock command on a connection without state: `handle`.
    #[inline(never)]
    fn other_request(&mut self, cx: &mut Cx<'_>, from: ProcId, id: u64, cmd: &Command) {
        if let Some(reply) = self.node.handle(cx.wall_ms, cx.mono_ns, from, id, cmd) {
            cx.send(from, Msg::Reply { id, reply });
        }
    }

    #[inline(never)]
    fn flush_produced(&mut self, cx: &mut Cx<'_>) {
        // Each drain is made only when there is something in it: the drain's own set-up
        // and drop cost ~35 instructions, and most writes produce observations only.
        if !self.node.repl.outbox.is_empty() {
            for (to, m) in self.node.drain_outbox() {
                cx.send(to, m);
            }
        }
        if !self.node.pending.is_empty() {
            for o in self.node.drain_observations() {
                cx.observe(o);
            }
        }
    }
}

impl Process for RedisProcess {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        self.node.finish_start(cx.wall_ms, cx.mono_ns);
        self.flush(cx);
        let first = self.first_cron_ns();
        self.start_cron(cx, first);
    }

    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        match msg {
            // The command is read where the loop put it: moving it into a binding copies
            // its 96 bytes to this frame, and again to hand it to the drop glue.
            Msg::Request { id, ref cmd } => {
                // `handle`'s path for the lock commands on a connection without state, with
                // the reply made where the message takes it (through `handle`'s `Option` it
                // was copied twice more) and each command's own frame called directly.
                let node = &mut self.node;
                match cmd {
                    Command::Set { .. } if node.conns.is_empty() => {
                        node.answer_set(cx, from, id, cmd);
                    }
                    Command::Eval { .. } if node.conns.is_empty() => {
                        node.answer_eval(cx, from, id, cmd);
                    }
                    _ => {
                        self.node.wrote = true;
                        self.other_request(cx, from, id, cmd);
                    }
                }
                // A SET's two strings are dropped inline (a tag test each); the generic
                // drop glue of `Command` saves and restores six registers around that.
                if let Msg::Request {
                    cmd: Command::Set { key, value, .. },
                    ..
                } = msg
                {
                    drop(key);
                    drop(value);
                }
                // Any other command is dropped where it lies, at the end of the call:
                // moving it to hand it to the drop glue copied its 96 bytes.
            }
            Msg::Repl(m) => {
                self.node.wrote = true;
                self.node.on_repl(cx.wall_ms, cx.mono_ns, from, m);
            }
            _ => {}
        }
        if !self.node.blocking.is_empty() {
            self.node.before_sleep(cx.wall_ms);
        }
        self.flush(cx);
        self.cron_after_message(cx);
    }

    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        if tag == TIMER_CRON {
            self.cron_timer(cx);
        }
    }

    fn on_restart(&mut self, keep_data: bool) {
        self.node.restart(keep_data);
    }

    fn on_skipped_ticks(&mut self, ticks: &SkippedTicks<'_>) -> bool {
        self.skipped_ticks(ticks)
    }

    fn tick_due(&mut self) -> TickDue {
        self.cron_due()
    }
}
