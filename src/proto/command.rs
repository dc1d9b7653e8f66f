//! Redis commands as typed values, and the parser from argument vectors.
//!
//! Simulated clients build `Command` values directly: the hot path never parses text. The
//! parser (`Command::parse`) serves the conformance corpus, Lua's `redis.call`, and users; it
//! reproduces Redis 7.0's arity checks and *syntax* errors. Errors that depend on the node's
//! state or clock (invalid expire time, WRONGTYPE, overflow) are raised when the node executes
//! the command, in the order Redis raises them.

use std::sync::Arc;

use sha1::{Digest, Sha1};

use crate::proto::reply::Reply;

pub use crate::proto::bytes::Bytes;

/// `NX` / `XX` on SET.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetCond {
    Nx,
    Xx,
}

/// The expiry option of SET, as given (validated by the node against its clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetExpiry {
    Ex(i64),
    Px(i64),
    ExAt(i64),
    PxAt(i64),
    KeepTtl,
}

/// Which of the four expire commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpireKind {
    Expire,
    PExpire,
    ExpireAt,
    PExpireAt,
}

impl ExpireKind {
    pub fn name(self) -> &'static str {
        match self {
            ExpireKind::Expire => "expire",
            ExpireKind::PExpire => "pexpire",
            ExpireKind::ExpireAt => "expireat",
            ExpireKind::PExpireAt => "pexpireat",
        }
    }
    pub fn in_seconds(self) -> bool {
        matches!(self, ExpireKind::Expire | ExpireKind::ExpireAt)
    }
    pub fn is_absolute(self) -> bool {
        matches!(self, ExpireKind::ExpireAt | ExpireKind::PExpireAt)
    }
}

/// NX/XX/GT/LT of the expire commands (already checked for compatibility).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpireCond {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
}

/// A script body with its SHA1, computed once when the script is made (clients reuse it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    pub source: Arc<[u8]>,
    pub sha: [u8; 20],
}

impl Script {
    pub fn new(source: &[u8]) -> Script {
        Script {
            source: source.into(),
            sha: sha1_of(source),
        }
    }
    pub fn sha_hex(&self) -> String {
        hex(&self.sha)
    }
}

pub fn sha1_of(bytes: &[u8]) -> [u8; 20] {
    let mut h = Sha1::new();
    h.update(bytes);
    h.finalize().into()
}

pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// Parses 40 hex digits (either case) into a SHA1; anything else is `None` (NOSCRIPT).
pub fn parse_sha_hex(s: &[u8]) -> Option<[u8; 20]> {
    if s.len() != 40 {
        return None;
    }
    let mut out = [0u8; 20];
    for (i, pair) in s.chunks(2).enumerate() {
        let d = |c: u8| (c as char).to_digit(16);
        out[i] = (d(pair[0])? * 16 + d(pair[1])?) as u8;
    }
    Some(out)
}

/// Which script EVALSHA/EVAL names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptRef {
    Source(Script),
    /// EVALSHA's argument: `None` when it is not 40 hex digits (always NOSCRIPT).
    Sha(Option<[u8; 20]>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Ping(Option<Bytes>),
    Get(Bytes),
    Set {
        key: Bytes,
        value: Bytes,
        cond: Option<SetCond>,
        get: bool,
        expiry: Option<SetExpiry>,
    },
    /// SETNX key value (legacy, `setnx-no-ttl` clients use it).
    SetNx(Bytes, Bytes),
    Del(Vec<Bytes>),
    Exists(Vec<Bytes>),
    Expire {
        kind: ExpireKind,
        key: Bytes,
        when: i64,
        cond: ExpireCond,
    },
    Ttl {
        key: Bytes,
        ms: bool,
    },
    ExpireTime {
        key: Bytes,
        ms: bool,
    },
    Persist(Bytes),
    IncrBy(Bytes, i64),
    /// DECRBY with its raw amount: DECRBY LLONG_MIN has its own error.
    DecrBy(Bytes, i64),
    /// Keys and arguments are shared, immutable slices: a Redlock client sends the same
    /// EVAL to every node, and a clone is then two reference counts, not two allocations.
    Eval {
        script: ScriptRef,
        keys: Arc<[Bytes]>,
        args: Arc<[Bytes]>,
        read_only: bool,
    },
    ScriptLoad(Bytes),
    ScriptExists(Vec<Bytes>),
    ScriptFlush,
    FlushAll,
    DbSize,
    Keys(Bytes),
    Type(Bytes),
    RPush(Bytes, Vec<Bytes>),
    DebugSetActiveExpire(bool),
    /// REPLICAOF NO ONE is `None`.
    ReplicaOf(Option<(Bytes, Bytes)>),
    Wait {
        replicas: i64,
        timeout_ms: i64,
    },
    Select(i64),
    /// ROLE: `["master", offset, [[host, port, offset], ...]]` or
    /// `["slave", host, port, state, offset]` (hosts are process names in the model).
    Role,
    /// HSET key field value [field value ...]: replies the number of fields added.
    HSet(Bytes, Vec<(Bytes, Bytes)>),
    HGet(Bytes, Bytes),
    HExists(Bytes, Bytes),
    HIncrBy(Bytes, Bytes, i64),
    /// HINCRBYFLOAT key field increment: the increment stays as sent (a long double the
    /// node reads, after processCommand's refusals); propagated as HSET of the result.
    HIncrByFloat(Bytes, Bytes, Bytes),
    HDel(Bytes, Vec<Bytes>),
    HGetAll(Bytes),
    HLen(Bytes),
    HMGet(Bytes, Vec<Bytes>),
    /// GETDEL key: propagated as DEL when it deleted.
    GetDel(Bytes),
    /// GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST].
    GetEx(Bytes, Option<GetExOpt>),
    /// TIME: the node's wall clock as [seconds, microseconds].
    Time,
    /// PUBLISH channel message: the number of receivers.
    Publish(Bytes, Bytes),
    /// FLUSHDB: empties the connection's selected database (FLUSHALL empties all 16).
    FlushDb,
    /// MULTI / EXEC / DISCARD / WATCH / UNWATCH: a connection's transaction state. In a
    /// replication stream MULTI and EXEC bracket the effects of one command, script or
    /// transaction (Redis 7.0 wraps more than one effect).
    Multi,
    Exec,
    Discard,
    Watch(Vec<Bytes>),
    Unwatch,
    /// SUBSCRIBE channel [channel ...] (`pattern`: PSUBSCRIBE).
    Subscribe {
        names: Vec<Bytes>,
        pattern: bool,
    },
    /// UNSUBSCRIBE [channel ...] (`pattern`: PUNSUBSCRIBE); none means all.
    Unsubscribe {
        names: Vec<Bytes>,
        pattern: bool,
    },
    /// STRLEN key.
    StrLen(Bytes),
    /// APPEND key value: propagated as itself.
    Append(Bytes, Bytes),
    /// SETRANGE key offset value. The offset stays as sent: Redis checks it in the command,
    /// after processCommand's refusals (a replica answers READONLY to `SETRANGE k -1 x`);
    /// [`setrange_offset`] reads it.
    SetRange(Bytes, Bytes, Bytes),
    /// RENAME / RENAMENX (`nx`) source destination: propagated as itself when it moved.
    Rename {
        keys: [Bytes; 2],
        nx: bool,
    },
    /// COPY source destination [DB n] [REPLACE]: the options stay as sent, for the same
    /// reason as SETRANGE's offset; [`copy_options`] reads them.
    Copy {
        keys: [Bytes; 2],
        opts: Vec<Bytes>,
    },
    /// OBJECT ENCODING key (the model answers no other OBJECT subcommand).
    ObjectEncoding(Bytes),
    /// ECHO message.
    Echo(Bytes),
    HKeys(Bytes),
    HVals(Bytes),
    /// HSETNX key field value.
    HSetNx(Bytes, Bytes, Bytes),
    HStrLen(Bytes, Bytes),
    /// HMSET key field value [field value ...]: HSET replying OK.
    HMSet(Bytes, Vec<(Bytes, Bytes)>),
    /// LPUSH key element [element ...].
    LPush(Bytes, Vec<Bytes>),
    /// LPOP key [count]: what follows the key stays as sent (as SETRANGE's offset);
    /// [`lpop_count`] reads it.
    LPop(Bytes, Vec<Bytes>),
    LLen(Bytes),
    /// READONLY (`true`) / READWRITE: cluster commands; a server without cluster support
    /// refuses both.
    ClusterReadMode(bool),
    /// AUTH [username] password, on a server with no password set (the model's only kind).
    Auth {
        user: Option<Bytes>,
        password: Bytes,
    },
    RandomKey,
    /// MOVE key db: the db stays as sent (read in the command, after processCommand's
    /// refusals); [`move_db`] reads it.
    Move {
        key: Bytes,
        db: Bytes,
    },
    /// SWAPDB index1 index2, as sent ([`swapdb_indexes`] reads them).
    SwapDb([Bytes; 2]),
    /// HELLO [protover [AUTH user pass] [SETNAME name]]: the arguments as sent, read in
    /// order when it runs (an AUTH or SETNAME takes effect before a later option fails).
    Hello(Vec<Bytes>),
    /// CLIENT ID / GETNAME / SETNAME (the model's subcommands of CLIENT).
    Client(ClientCmd),
    /// INFO [section ...]: the sections as sent.
    Info(Vec<Bytes>),
    /// BLPOP key [key ...] timeout: the timeout stays as sent (seconds, a long double Redis
    /// reads in the command, after processCommand's refusals); the node reads it.
    BLPop {
        keys: Vec<Bytes>,
        timeout: Bytes,
    },
    /// FUNCTION LOAD / DELETE / LIST / FLUSH (the model's subcommands of FUNCTION).
    Function(FunctionCmd),
    /// FCALL / FCALL_RO (`read_only`) function numkeys key... arg...: numkeys and what
    /// follows stay as sent (Redis looks the function up before it reads numkeys).
    FCall {
        function: Bytes,
        numkeys: Bytes,
        rest: Arc<[Bytes]>,
        read_only: bool,
    },
}

/// The subcommands of FUNCTION the model answers, with what follows the subcommand as sent:
/// Redis reads it when the command runs (an error there comes back inside EXEC's array).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FunctionCmd {
    /// `[REPLACE] code`.
    Load(Vec<Bytes>),
    Delete(Bytes),
    /// `[WITHCODE] [LIBRARYNAME pattern]`.
    List(Vec<Bytes>),
    /// `[ASYNC|SYNC]`; `typed` is the subcommand as sent, which one error repeats.
    Flush {
        typed: Bytes,
        args: Vec<Bytes>,
    },
}

/// The subcommands of CLIENT the model answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientCmd {
    Id,
    GetName,
    SetName(Bytes),
}

/// GETEX's option, as given. The amount stays as sent: Redis 7.0 parses it only after the
/// key's type check (`GETEX list PX abc` is WRONGTYPE, `GETEX missing PX abc` is nil).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GetExOpt {
    Expiry(ExpiryUnit, Bytes),
    Persist,
}

/// Which expiry option GETEX was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpiryUnit {
    Ex,
    Px,
    ExAt,
    PxAt,
}

impl ExpiryUnit {
    pub fn name(self) -> &'static str {
        match self {
            ExpiryUnit::Ex => "EX",
            ExpiryUnit::Px => "PX",
            ExpiryUnit::ExAt => "EXAT",
            ExpiryUnit::PxAt => "PXAT",
        }
    }
    /// The option with its amount, as SET's expiry (for the shared validation).
    pub fn with(self, v: i64) -> SetExpiry {
        match self {
            ExpiryUnit::Ex => SetExpiry::Ex(v),
            ExpiryUnit::Px => SetExpiry::Px(v),
            ExpiryUnit::ExAt => SetExpiry::ExAt(v),
            ExpiryUnit::PxAt => SetExpiry::PxAt(v),
        }
    }
}

/// Why parsing failed. Scripts word the first two differently from clients.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    Unknown {
        name: String,
        args: Vec<Bytes>,
    },
    Arity(&'static str),
    /// An unknown subcommand of a container command (`OBJECT bogus`): Redis's
    /// processCommand refuses it before the command runs (a queue-time error in MULTI), and
    /// a script gets the unknown-command text. The full client text.
    UnknownSubcommand(String),
    /// Any other error reply, full text.
    Reply(String),
}

impl ParseError {
    /// The error a client gets.
    pub fn client_reply(&self) -> Reply {
        match self {
            ParseError::Unknown { name, args } => {
                let mut msg = format!(
                    "ERR unknown command '{}', with args beginning with: ",
                    trunc(name, 128)
                );
                for a in args {
                    msg.push('\'');
                    msg.push_str(&trunc(&String::from_utf8_lossy(a), 128));
                    msg.push_str("' ");
                }
                Reply::Error(msg)
            }
            ParseError::Arity(name) => Reply::Error(format!(
                "ERR wrong number of arguments for '{name}' command"
            )),
            ParseError::UnknownSubcommand(m) | ParseError::Reply(m) => Reply::Error(m.clone()),
        }
    }

    /// The error a script's `redis.call` gets.
    pub fn script_reply(&self) -> Reply {
        match self {
            ParseError::Unknown { .. } | ParseError::UnknownSubcommand(_) => {
                Reply::err("ERR Unknown Redis command called from script")
            }
            ParseError::Arity(_) => {
                Reply::err("ERR Wrong number of args calling Redis command from script")
            }
            ParseError::Reply(m) => Reply::Error(m.clone()),
        }
    }
}

fn trunc(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

pub const ERR_SYNTAX: &str = "ERR syntax error";
pub const ERR_NOT_INTEGER: &str = "ERR value is not an integer or out of range";

fn syntax() -> ParseError {
    ParseError::Reply(ERR_SYNTAX.into())
}

/// Redis's `string2ll`: the canonical decimal form of an i64 and nothing else
/// (no sign `+`, no leading zeros, no `-0`, no spaces, at most 20 bytes).
pub fn parse_i64_strict(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !(b'1'..=b'9').contains(&digits[0]) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

fn int_arg(s: &[u8]) -> Result<i64, ParseError> {
    parse_i64_strict(s).ok_or_else(|| ParseError::Reply(ERR_NOT_INTEGER.into()))
}

/// Arity as Redis declares it: positive = exact argc, negative = at least |n|.
fn arity_ok(arity: i32, argc: usize) -> bool {
    if arity >= 0 {
        argc == arity as usize
    } else {
        argc >= arity.unsigned_abs() as usize
    }
}

/// Commands the model knows: (lower-case name, Redis arity, writes?).
const TABLE: &[(&str, i32, bool)] = &[
    ("ping", -1, false),
    ("get", 2, false),
    ("set", -3, true),
    ("setnx", 3, true),
    ("setex", 4, true),
    ("psetex", 4, true),
    ("del", -2, true),
    ("unlink", -2, true),
    ("exists", -2, false),
    ("expire", -3, true),
    ("pexpire", -3, true),
    ("expireat", -3, true),
    ("pexpireat", -3, true),
    ("ttl", 2, false),
    ("pttl", 2, false),
    ("expiretime", 2, false),
    ("pexpiretime", 2, false),
    ("persist", 2, true),
    ("incr", 2, true),
    ("decr", 2, true),
    ("incrby", 3, true),
    ("decrby", 3, true),
    ("eval", -3, false),
    ("evalsha", -3, false),
    ("eval_ro", -3, false),
    ("evalsha_ro", -3, false),
    ("script", -2, false),
    ("flushall", -1, true),
    ("flushdb", -1, true),
    ("dbsize", 1, false),
    ("keys", 2, false),
    ("type", 2, false),
    ("rpush", -3, true),
    ("debug", -2, false),
    ("replicaof", 3, false),
    ("slaveof", 3, false),
    ("wait", 3, false),
    ("select", 2, false),
    ("role", 1, false),
    ("hset", -4, true),
    ("hget", 3, false),
    ("hexists", 3, false),
    ("hincrby", 4, true),
    ("hincrbyfloat", 4, true),
    ("hdel", -3, true),
    ("hgetall", 2, false),
    ("hlen", 2, false),
    ("hmget", -3, false),
    ("getdel", 2, true),
    ("getex", -2, true),
    ("time", 1, false),
    ("publish", 3, false),
    ("multi", 1, false),
    ("exec", 1, false),
    ("discard", 1, false),
    ("watch", -2, false),
    ("unwatch", 1, false),
    ("subscribe", -2, false),
    ("unsubscribe", -1, false),
    ("psubscribe", -2, false),
    ("punsubscribe", -1, false),
    ("strlen", 2, false),
    ("append", 3, true),
    ("setrange", 4, true),
    ("rename", 3, true),
    ("renamenx", 3, true),
    ("copy", -3, true),
    ("object", -2, false),
    ("echo", 2, false),
    ("hkeys", 2, false),
    ("hvals", 2, false),
    ("hsetnx", 4, true),
    ("hstrlen", 3, false),
    ("hmset", -4, true),
    ("lpush", -3, true),
    ("lpop", -2, true),
    ("llen", 2, false),
    ("readonly", 1, false),
    ("readwrite", 1, false),
    ("auth", -2, false),
    ("randomkey", 1, false),
    ("blpop", -3, true),
    ("move", 3, true),
    ("swapdb", 3, true),
    ("hello", -1, false),
    ("client", -2, false),
    ("info", -1, false),
    ("function", -2, false),
    ("fcall", -3, false),
    ("fcall_ro", -3, false),
];

/// Redis command flags the model needs: is `name` (lower-case) a write command?
pub fn is_write_command(name: &str) -> bool {
    TABLE.iter().any(|(n, _, w)| *n == name && *w)
}

/// Commands a script may not call.
pub fn is_denied_in_scripts(name: &str) -> bool {
    matches!(
        name,
        "eval"
            | "evalsha"
            | "eval_ro"
            | "evalsha_ro"
            | "script"
            | "wait"
            | "debug"
            | "replicaof"
            | "slaveof"
            | "multi"
            | "exec"
            | "discard"
            | "watch"
            | "unwatch"
            | "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "role"
            | "auth"
            | "blpop"
            | "hello"
            | "client"
            | "function"
            | "fcall"
            | "fcall_ro"
    )
}

fn eq_ic(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

impl Command {
    /// Is this command a write (refused on read-only replicas and in read-only scripts)?
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Command::Set { .. }
                | Command::SetNx(..)
                | Command::Del(_)
                | Command::Expire { .. }
                | Command::Persist(_)
                | Command::IncrBy(..)
                | Command::DecrBy(..)
                | Command::FlushAll
                | Command::FlushDb
                | Command::RPush(..)
                | Command::HSet(..)
                | Command::HIncrBy(..)
                | Command::HIncrByFloat(..)
                | Command::HDel(..)
                | Command::GetDel(_)
                | Command::GetEx(..)
                | Command::Append(..)
                | Command::SetRange(..)
                | Command::Rename { .. }
                | Command::Copy { .. }
                | Command::HSetNx(..)
                | Command::HMSet(..)
                | Command::LPush(..)
                | Command::LPop(..)
                | Command::BLPop { .. }
                | Command::Move { .. }
                | Command::SwapDb(_)
                | Command::Function(
                    FunctionCmd::Load(_) | FunctionCmd::Delete(_) | FunctionCmd::Flush { .. }
                )
        )
    }

    /// Commands Redis flags `denyoom` (those that may grow memory): refused with OOM while
    /// the node is past its memory cap. DEL, EXPIRE, GETDEL and the like are not.
    pub fn may_grow_memory(&self) -> bool {
        matches!(
            self,
            Command::Set { .. }
                | Command::SetNx(..)
                | Command::IncrBy(..)
                | Command::DecrBy(..)
                | Command::RPush(..)
                | Command::HSet(..)
                | Command::HIncrBy(..)
                | Command::HIncrByFloat(..)
                | Command::Append(..)
                | Command::SetRange(..)
                | Command::Copy { .. }
                | Command::HSetNx(..)
                | Command::HMSet(..)
                | Command::LPush(..)
        )
    }

    /// Parses an argument vector (argv[0] is the command name, any case).
    pub fn parse<A: AsRef<[u8]>>(argv: &[A]) -> Result<Command, ParseError> {
        let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::from_slice(a.as_ref())).collect();
        let argv = argv.as_slice();
        let Some(first) = argv.first() else {
            return Err(ParseError::Reply("ERR empty command".into()));
        };
        let name = String::from_utf8_lossy(first).to_ascii_lowercase();
        let Some(&(canon, arity, _)) = TABLE.iter().find(|(n, _, _)| *n == name) else {
            return Err(ParseError::Unknown {
                name: String::from_utf8_lossy(first).into_owned(),
                args: argv[1..].to_vec(),
            });
        };
        if !arity_ok(arity, argv.len()) {
            return Err(ParseError::Arity(canon));
        }
        let a = &argv[1..];
        let cmd = match canon {
            "ping" => match a.len() {
                0 => Command::Ping(None),
                1 => Command::Ping(Some(a[0].clone())),
                _ => return Err(ParseError::Arity("ping")),
            },
            "get" => Command::Get(a[0].clone()),
            "set" => parse_set(a)?,
            "setnx" => Command::SetNx(a[0].clone(), a[1].clone()),
            "setex" | "psetex" => {
                let n = int_arg(&a[1])?;
                let expiry = if canon == "setex" {
                    SetExpiry::Ex(n)
                } else {
                    SetExpiry::Px(n)
                };
                if n <= 0 {
                    return Err(ParseError::Reply(format!(
                        "ERR invalid expire time in '{canon}' command"
                    )));
                }
                Command::Set {
                    key: a[0].clone(),
                    value: a[2].clone(),
                    cond: None,
                    get: false,
                    expiry: Some(expiry),
                }
            }
            "del" | "unlink" => Command::Del(a.to_vec()),
            "exists" => Command::Exists(a.to_vec()),
            "expire" | "pexpire" | "expireat" | "pexpireat" => {
                let kind = match canon {
                    "expire" => ExpireKind::Expire,
                    "pexpire" => ExpireKind::PExpire,
                    "expireat" => ExpireKind::ExpireAt,
                    _ => ExpireKind::PExpireAt,
                };
                // Redis 7.0 (expireGenericCommand) checks the options before the time:
                // `PEXPIRE k abc GT NX` is the options error, not the integer one.
                let cond = parse_expire_cond(&a[2..])?;
                let when = int_arg(&a[1])?;
                Command::Expire {
                    kind,
                    key: a[0].clone(),
                    when,
                    cond,
                }
            }
            "ttl" | "pttl" => Command::Ttl {
                key: a[0].clone(),
                ms: canon == "pttl",
            },
            "expiretime" | "pexpiretime" => Command::ExpireTime {
                key: a[0].clone(),
                ms: canon == "pexpiretime",
            },
            "persist" => Command::Persist(a[0].clone()),
            "incr" => Command::IncrBy(a[0].clone(), 1),
            "decr" => Command::IncrBy(a[0].clone(), -1),
            "incrby" => Command::IncrBy(a[0].clone(), int_arg(&a[1])?),
            "decrby" => Command::DecrBy(a[0].clone(), int_arg(&a[1])?),
            "eval" | "evalsha" | "eval_ro" | "evalsha_ro" => {
                let numkeys = int_arg(&a[1])?;
                if numkeys < 0 {
                    return Err(ParseError::Reply(
                        "ERR Number of keys can't be negative".into(),
                    ));
                }
                let rest = &a[2..];
                if numkeys as u64 > rest.len() as u64 {
                    return Err(ParseError::Reply(
                        "ERR Number of keys can't be greater than number of args".into(),
                    ));
                }
                let (keys, args) = rest.split_at(numkeys as usize);
                let script = if canon.starts_with("evalsha") {
                    ScriptRef::Sha(parse_sha_hex(&a[0]))
                } else {
                    ScriptRef::Source(Script::new(&a[0]))
                };
                Command::Eval {
                    script,
                    keys: keys.into(),
                    args: args.into(),
                    read_only: canon.ends_with("_ro"),
                }
            }
            "script" => {
                // Redis 7.0 checks subcommands against their own table: an unknown name, then
                // the subcommand's arity (`script|load` is 3, `script|exists` -3,
                // `script|flush` -2), then FLUSH's option.
                let sub = &a[0];
                if eq_ic(sub, "load") {
                    if a.len() != 2 {
                        return Err(ParseError::Arity("script|load"));
                    }
                    Command::ScriptLoad(a[1].clone())
                } else if eq_ic(sub, "exists") {
                    if a.len() < 2 {
                        return Err(ParseError::Arity("script|exists"));
                    }
                    Command::ScriptExists(a[1..].to_vec())
                } else if eq_ic(sub, "flush") {
                    if a.len() == 1
                        || (a.len() == 2 && (eq_ic(&a[1], "sync") || eq_ic(&a[1], "async")))
                    {
                        Command::ScriptFlush
                    } else {
                        return Err(ParseError::Reply(
                            "ERR SCRIPT FLUSH only support SYNC|ASYNC option".into(),
                        ));
                    }
                } else {
                    return Err(script_other(a));
                }
            }
            "flushall" | "flushdb" => {
                if a.len() > 1 || (a.len() == 1 && !(eq_ic(&a[0], "sync") || eq_ic(&a[0], "async")))
                {
                    return Err(syntax());
                }
                if canon == "flushall" {
                    Command::FlushAll
                } else {
                    Command::FlushDb
                }
            }
            "dbsize" => Command::DbSize,
            "keys" => Command::Keys(a[0].clone()),
            "type" => Command::Type(a[0].clone()),
            "rpush" => Command::RPush(a[0].clone(), a[1..].to_vec()),
            "debug" => {
                if eq_ic(&a[0], "set-active-expire") && a.len() == 2 {
                    let on = int_arg(&a[1])?;
                    Command::DebugSetActiveExpire(on != 0)
                } else {
                    return Err(ParseError::Reply(format!(
                        "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
                        String::from_utf8_lossy(&a[0])
                    )));
                }
            }
            "replicaof" | "slaveof" => {
                if eq_ic(&a[0], "no") && eq_ic(&a[1], "one") {
                    Command::ReplicaOf(None)
                } else {
                    Command::ReplicaOf(Some((a[0].clone(), a[1].clone())))
                }
            }
            "wait" => {
                let replicas = int_arg(&a[0])?;
                let timeout_ms = parse_i64_strict(&a[1]).ok_or_else(|| {
                    ParseError::Reply("ERR timeout is not an integer or out of range".into())
                })?;
                if timeout_ms < 0 {
                    return Err(ParseError::Reply("ERR timeout is negative".into()));
                }
                Command::Wait {
                    replicas,
                    timeout_ms,
                }
            }
            "role" => Command::Role,
            "hset" | "hmset" => {
                // Past the table's arity (-4) the pair check is HSET's own: a script's
                // `redis.call` gets the client's text here, not "Wrong number of args".
                if a.len().is_multiple_of(2) {
                    return Err(ParseError::Reply(format!(
                        "ERR wrong number of arguments for '{canon}' command"
                    )));
                }
                let pairs = a[1..]
                    .chunks(2)
                    .map(|p| (p[0].clone(), p[1].clone()))
                    .collect();
                if canon == "hset" {
                    Command::HSet(a[0].clone(), pairs)
                } else {
                    Command::HMSet(a[0].clone(), pairs)
                }
            }
            "hget" => Command::HGet(a[0].clone(), a[1].clone()),
            "hexists" => Command::HExists(a[0].clone(), a[1].clone()),
            "hincrby" => Command::HIncrBy(a[0].clone(), a[1].clone(), int_arg(&a[2])?),
            "hincrbyfloat" => Command::HIncrByFloat(a[0].clone(), a[1].clone(), a[2].clone()),
            "hdel" => Command::HDel(a[0].clone(), a[1..].to_vec()),
            "hgetall" => Command::HGetAll(a[0].clone()),
            "hlen" => Command::HLen(a[0].clone()),
            "hmget" => Command::HMGet(a[0].clone(), a[1..].to_vec()),
            "getdel" => Command::GetDel(a[0].clone()),
            "getex" => parse_getex(a)?,
            "time" => Command::Time,
            "publish" => Command::Publish(a[0].clone(), a[1].clone()),
            // Redis 7.0's selectCommand reads the index with getIntFromObjectOrReply.
            // (getIntFromObjectOrReply: past a C int it is its range error).
            "select" => Command::Select(int_range_arg(&a[0])?),
            "multi" => Command::Multi,
            "exec" => Command::Exec,
            "discard" => Command::Discard,
            "watch" => Command::Watch(a.to_vec()),
            "unwatch" => Command::Unwatch,
            "subscribe" | "psubscribe" => Command::Subscribe {
                names: a.to_vec(),
                pattern: canon == "psubscribe",
            },
            "unsubscribe" | "punsubscribe" => Command::Unsubscribe {
                names: a.to_vec(),
                pattern: canon == "punsubscribe",
            },
            "strlen" => Command::StrLen(a[0].clone()),
            "append" => Command::Append(a[0].clone(), a[1].clone()),
            "setrange" => Command::SetRange(a[0].clone(), a[1].clone(), a[2].clone()),
            "rename" | "renamenx" => Command::Rename {
                keys: [a[0].clone(), a[1].clone()],
                nx: canon == "renamenx",
            },
            "copy" => Command::Copy {
                keys: [a[0].clone(), a[1].clone()],
                opts: a[2..].to_vec(),
            },
            "object" => parse_object(a)?,
            "echo" => Command::Echo(a[0].clone()),
            "hkeys" => Command::HKeys(a[0].clone()),
            "hvals" => Command::HVals(a[0].clone()),
            "hsetnx" => Command::HSetNx(a[0].clone(), a[1].clone(), a[2].clone()),
            "hstrlen" => Command::HStrLen(a[0].clone(), a[1].clone()),
            "lpush" => Command::LPush(a[0].clone(), a[1..].to_vec()),
            "lpop" => Command::LPop(a[0].clone(), a[1..].to_vec()),
            "llen" => Command::LLen(a[0].clone()),
            "readonly" | "readwrite" => Command::ClusterReadMode(canon == "readonly"),
            "auth" => match a.len() {
                1 => Command::Auth {
                    user: None,
                    password: a[0].clone(),
                },
                2 => Command::Auth {
                    user: Some(a[0].clone()),
                    password: a[1].clone(),
                },
                _ => return Err(syntax()),
            },
            "randomkey" => Command::RandomKey,
            "move" => Command::Move {
                key: a[0].clone(),
                db: a[1].clone(),
            },
            "swapdb" => Command::SwapDb([a[0].clone(), a[1].clone()]),
            "hello" => Command::Hello(a.to_vec()),
            "client" => Command::Client(parse_client(a)?),
            "info" => Command::Info(a.to_vec()),
            "blpop" => Command::BLPop {
                keys: a[..a.len() - 1].to_vec(),
                timeout: a[a.len() - 1].clone(),
            },
            "function" => Command::Function(parse_function(a)?),
            "fcall" | "fcall_ro" => Command::FCall {
                function: a[0].clone(),
                numkeys: a[1].clone(),
                rest: a[2..].into(),
                read_only: canon == "fcall_ro",
            },
            _ => unreachable!("every table entry has a parser arm"),
        };
        Ok(cmd)
    }
}

/// COPY's options (`Command::Copy`'s `opts`) as Redis 7.0.15's copyCommand reads them,
/// left to right, each error as it is met: `REPLACE`, or `DB n` (an int, then its range),
/// anything else a syntax error. The destination db (`None`: the source's) and REPLACE.
pub fn copy_options(opts: &[Bytes]) -> Result<(Option<u8>, bool), ParseError> {
    let mut db: Option<u8> = None;
    let mut replace = false;
    let mut j = 0;
    while j < opts.len() {
        let more = opts.len() - j - 1;
        if eq_ic(&opts[j], "replace") {
            replace = true;
        } else if eq_ic(&opts[j], "db") && more >= 1 {
            let n = int_range_arg(&opts[j + 1])?;
            match u8::try_from(n) {
                Ok(d) if usize::from(d) < DATABASES => db = Some(d),
                _ => return Err(ParseError::Reply("ERR DB index is out of range".into())),
            }
            j += 1;
        } else {
            return Err(syntax());
        }
        j += 1;
    }
    Ok((db, replace))
}

/// MOVE's db as moveCommand reads it (getIntFromObjectOrReply, then its range); the same
/// db is the caller's check.
pub fn move_db(raw: &[u8]) -> Result<u8, ParseError> {
    let n = int_range_arg(raw)?;
    match u8::try_from(n) {
        Ok(d) if usize::from(d) < DATABASES => Ok(d),
        _ => Err(ParseError::Reply("ERR DB index is out of range".into())),
    }
}

/// SWAPDB's two indexes as swapdbCommand reads them: each an int (its own text for either
/// failure: not an integer, or past a C int), then both in range.
pub fn swapdb_indexes(raw: &[Bytes; 2]) -> Result<[u8; 2], ParseError> {
    let mut out = [0u8; 2];
    let mut ints = [0i64; 2];
    for (i, which) in ["first", "second"].iter().enumerate() {
        ints[i] = parse_i64_strict(&raw[i])
            .filter(|n| i32::try_from(*n).is_ok())
            .ok_or_else(|| ParseError::Reply(format!("ERR invalid {which} DB index")))?;
    }
    for i in 0..2 {
        match u8::try_from(ints[i]) {
            Ok(d) if usize::from(d) < DATABASES => out[i] = d,
            _ => return Err(ParseError::Reply("ERR DB index is out of range".into())),
        }
    }
    Ok(out)
}

/// SCRIPT's subcommands the model does not run: DEBUG, HELP and KILL (a script never runs
/// long enough in the model to be killed, and nobody debugs one) are refused with a model
/// error after their arity; an unknown one is Redis's container-command refusal, made
/// before a transaction queues it.
fn script_other(a: &[Bytes]) -> ParseError {
    let sub = String::from_utf8_lossy(&a[0]).to_ascii_lowercase();
    let (full, arity) = match sub.as_str() {
        "debug" => ("script|debug", 3),
        "help" => ("script|help", 2),
        "kill" => ("script|kill", 2),
        _ => {
            return ParseError::UnknownSubcommand(format!(
                "ERR unknown subcommand '{}'. Try SCRIPT HELP.",
                trunc(&String::from_utf8_lossy(&a[0]), 128)
            ));
        }
    };
    if !arity_ok(arity, a.len() + 1) {
        return ParseError::Arity(full);
    }
    ParseError::Reply(format!(
        "ERR the model answers SCRIPT LOAD, EXISTS and FLUSH only, not SCRIPT {}",
        sub.to_ascii_uppercase()
    ))
}

/// FUNCTION's subcommands, each with its own arity (`function|load` -3, `function|delete` 3,
/// `function|list` and `function|flush` -2). DUMP, RESTORE, STATS, KILL and HELP are
/// refused with a model error after their arity (no one restores RDB payloads or kills
/// functions in the model); an unknown one is Redis's container-command refusal.
fn parse_function(a: &[Bytes]) -> Result<FunctionCmd, ParseError> {
    let sub = String::from_utf8_lossy(&a[0]).to_ascii_lowercase();
    let (full, arity) = match sub.as_str() {
        "load" => ("function|load", -3),
        "delete" => ("function|delete", 3),
        "list" => ("function|list", -2),
        "flush" => ("function|flush", -2),
        "dump" => ("function|dump", 2),
        "restore" => ("function|restore", -3),
        "stats" => ("function|stats", 2),
        "kill" => ("function|kill", 2),
        "help" => ("function|help", 2),
        _ => {
            return Err(ParseError::UnknownSubcommand(format!(
                "ERR unknown subcommand '{}'. Try FUNCTION HELP.",
                trunc(&String::from_utf8_lossy(&a[0]), 128)
            )));
        }
    };
    if !arity_ok(arity, a.len() + 1) {
        return Err(ParseError::Arity(full));
    }
    Ok(match sub.as_str() {
        "load" => FunctionCmd::Load(a[1..].to_vec()),
        "delete" => FunctionCmd::Delete(a[1].clone()),
        "list" => FunctionCmd::List(a[1..].to_vec()),
        "flush" => FunctionCmd::Flush {
            typed: a[0].clone(),
            args: a[1..].to_vec(),
        },
        _ => {
            return Err(ParseError::Reply(format!(
                "ERR the model answers FUNCTION LOAD, DELETE, LIST and FLUSH only, not FUNCTION {}",
                sub.to_ascii_uppercase()
            )));
        }
    })
}

/// CLIENT's subcommands: ID, GETNAME and SETNAME are modelled; the others Redis 7.0.15 knows
/// are refused with a model error after their arity (they read connections the model does
/// not list, or change how it replies); an unknown one (SETINFO is 7.2's) is Redis's
/// container-command refusal.
fn parse_client(a: &[Bytes]) -> Result<ClientCmd, ParseError> {
    const SUBCOMMANDS: [(&str, i32); 16] = [
        ("client|caching", 3),
        ("client|getname", 2),
        ("client|getredir", 2),
        ("client|help", 2),
        ("client|id", 2),
        ("client|info", 2),
        ("client|kill", -3),
        ("client|list", -2),
        ("client|no-evict", 3),
        ("client|pause", -3),
        ("client|reply", 3),
        ("client|setname", 3),
        ("client|tracking", -3),
        ("client|trackinginfo", 2),
        ("client|unblock", -3),
        ("client|unpause", 2),
    ];
    let sub = String::from_utf8_lossy(&a[0]).to_ascii_lowercase();
    let Some(&(full, arity)) = SUBCOMMANDS
        .iter()
        .find(|(n, _)| n.strip_prefix("client|") == Some(sub.as_str()))
    else {
        return Err(ParseError::UnknownSubcommand(format!(
            "ERR unknown subcommand '{}'. Try CLIENT HELP.",
            trunc(&String::from_utf8_lossy(&a[0]), 128)
        )));
    };
    if !arity_ok(arity, a.len() + 1) {
        return Err(ParseError::Arity(full));
    }
    let name = &full["client|".len()..];
    match name {
        "id" => Ok(ClientCmd::Id),
        "getname" => Ok(ClientCmd::GetName),
        "setname" => Ok(ClientCmd::SetName(a[1].clone())),
        _ => Err(ParseError::Reply(format!(
            "ERR the model answers CLIENT ID, GETNAME and SETNAME only, not CLIENT {}",
            name.to_ascii_uppercase()
        ))),
    }
}

/// SETRANGE's offset as setrangeCommand reads it (getLongFromObjectOrReply, then its sign),
/// before the key is looked up.
pub fn setrange_offset(raw: &[u8]) -> Result<i64, ParseError> {
    let offset = int_arg(raw)?;
    if offset < 0 {
        return Err(ParseError::Reply("ERR offset is out of range".into()));
    }
    Ok(offset)
}

/// What follows LPOP's key, as popGenericCommand reads it before the lookup: nothing, or a
/// count >= 0 (getPositiveLongFromObjectOrReply's own text for anything else); more is its
/// arity error (past the table's -2, so a script gets this text too).
pub fn lpop_count(rest: &[Bytes]) -> Result<Option<i64>, ParseError> {
    match rest {
        [] => Ok(None),
        [c] => match parse_i64_strict(c) {
            Some(n) if n >= 0 => Ok(Some(n)),
            _ => Err(ParseError::Reply(
                "ERR value is out of range, must be positive".into(),
            )),
        },
        _ => Err(ParseError::Reply(
            "ERR wrong number of arguments for 'lpop' command".into(),
        )),
    }
}

/// `databases 16` (redis.conf default): COPY's DB range.
const DATABASES: usize = 16;

/// Redis's getIntFromObjectOrReply: an integer, then the range of a C int.
pub fn int_range_arg(s: &[u8]) -> Result<i64, ParseError> {
    let n = int_arg(s)?;
    if i32::try_from(n).is_err() {
        return Err(ParseError::Reply(
            "ERR value is out of range, value must between -2147483648 and 2147483647".into(),
        ));
    }
    Ok(n)
}

/// OBJECT's subcommands: ENCODING (arity 3) is modelled; the others Redis 7.0.15 knows are
/// refused with a model error (they read the LRU/LFU clock and reference counts, which the
/// model does not keep); an unknown one is Redis's container-command refusal.
fn parse_object(a: &[Bytes]) -> Result<Command, ParseError> {
    let sub = String::from_utf8_lossy(&a[0]).to_ascii_lowercase();
    let arity = match sub.as_str() {
        "encoding" | "freq" | "idletime" | "refcount" => 3,
        "help" => 2,
        _ => {
            return Err(ParseError::UnknownSubcommand(format!(
                "ERR unknown subcommand '{}'. Try OBJECT HELP.",
                trunc(&String::from_utf8_lossy(&a[0]), 128)
            )));
        }
    };
    if a.len() + 1 != arity {
        return Err(ParseError::Arity(match sub.as_str() {
            "encoding" => "object|encoding",
            "freq" => "object|freq",
            "idletime" => "object|idletime",
            "refcount" => "object|refcount",
            _ => "object|help",
        }));
    }
    if sub != "encoding" {
        return Err(ParseError::Reply(format!(
            "ERR the model answers OBJECT ENCODING only, not OBJECT {}",
            sub.to_ascii_uppercase()
        )));
    }
    Ok(Command::ObjectEncoding(a[1].clone()))
}

/// SET's options, as `parseExtendedStringArgumentsOrReply` in Redis 7.0 reads them: an option
/// may repeat (the last expiry wins); NX/XX and the expiry kinds exclude each other.
fn parse_set(a: &[Bytes]) -> Result<Command, ParseError> {
    let (key, value) = (a[0].clone(), a[1].clone());
    let mut cond: Option<SetCond> = None;
    let mut get = false;
    // (kind tag, raw argument): the number is parsed after all options, as Redis does.
    let mut expiry: Option<(u8, Option<&Bytes>)> = None;
    let mut j = 2;
    while j < a.len() {
        let opt = &a[j];
        let next = a.get(j + 1);
        let exp_kind = expiry.map(|(k, _)| k);
        if eq_ic(opt, "nx") && cond != Some(SetCond::Xx) {
            cond = Some(SetCond::Nx);
        } else if eq_ic(opt, "xx") && cond != Some(SetCond::Nx) {
            cond = Some(SetCond::Xx);
        } else if eq_ic(opt, "get") {
            get = true;
        } else if eq_ic(opt, "keepttl") && matches!(exp_kind, None | Some(b'K')) {
            expiry = Some((b'K', None));
        } else if let Some(tag) = [("ex", b'e'), ("px", b'p'), ("exat", b'E'), ("pxat", b'P')]
            .iter()
            .find(|(n, _)| eq_ic(opt, n))
            .map(|(_, t)| *t)
        {
            match (exp_kind, next) {
                (None, Some(n)) => expiry = Some((tag, Some(n))),
                (Some(k), Some(n)) if k == tag => expiry = Some((tag, Some(n))),
                _ => return Err(syntax()),
            }
            j += 1;
        } else {
            return Err(syntax());
        }
        j += 1;
    }
    let expiry = match expiry {
        None => None,
        Some((b'K', _)) => Some(SetExpiry::KeepTtl),
        Some((tag, Some(raw))) => {
            let v = int_arg(raw)?;
            Some(match tag {
                b'e' => SetExpiry::Ex(v),
                b'p' => SetExpiry::Px(v),
                b'E' => SetExpiry::ExAt(v),
                _ => SetExpiry::PxAt(v),
            })
        }
        Some((_, None)) => return Err(syntax()),
    };
    Ok(Command::Set {
        key,
        value,
        cond,
        get,
        expiry,
    })
}

/// GETEX's options as Redis 7.0's `parseExtendedStringArgumentsOrReply` reads them for GETEX:
/// one expiry kind (repeating the same kind is allowed, the last wins) or PERSIST, nothing
/// else; the number is left for the node (after the type check).
fn parse_getex(a: &[Bytes]) -> Result<Command, ParseError> {
    let key = a[0].clone();
    let mut persist = false;
    let mut expiry: Option<(u8, &Bytes)> = None;
    let mut j = 1;
    while j < a.len() {
        let opt = &a[j];
        let next = a.get(j + 1);
        if eq_ic(opt, "persist") && expiry.is_none() {
            persist = true;
        } else if let Some(tag) = [("ex", b'e'), ("px", b'p'), ("exat", b'E'), ("pxat", b'P')]
            .iter()
            .find(|(n, _)| eq_ic(opt, n))
            .map(|(_, t)| *t)
        {
            match (persist, expiry.map(|(k, _)| k), next) {
                (false, None, Some(n)) => expiry = Some((tag, n)),
                (false, Some(k), Some(n)) if k == tag => expiry = Some((tag, n)),
                _ => return Err(syntax()),
            }
            j += 1;
        } else {
            return Err(syntax());
        }
        j += 1;
    }
    let opt = match expiry {
        Some((tag, raw)) => {
            let unit = match tag {
                b'e' => ExpiryUnit::Ex,
                b'p' => ExpiryUnit::Px,
                b'E' => ExpiryUnit::ExAt,
                _ => ExpiryUnit::PxAt,
            };
            Some(GetExOpt::Expiry(unit, raw.clone()))
        }
        None if persist => Some(GetExOpt::Persist),
        None => None,
    };
    Ok(Command::GetEx(key, opt))
}

fn parse_expire_cond(opts: &[Bytes]) -> Result<ExpireCond, ParseError> {
    let mut c = ExpireCond::default();
    for o in opts {
        if eq_ic(o, "nx") {
            c.nx = true;
        } else if eq_ic(o, "xx") {
            c.xx = true;
        } else if eq_ic(o, "gt") {
            c.gt = true;
        } else if eq_ic(o, "lt") {
            c.lt = true;
        } else {
            return Err(ParseError::Reply(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(o)
            )));
        }
    }
    if c.nx && (c.xx || c.gt || c.lt) {
        return Err(ParseError::Reply(
            "ERR NX and XX, GT or LT options at the same time are not compatible".into(),
        ));
    }
    if c.gt && c.lt {
        return Err(ParseError::Reply(
            "ERR GT and LT options at the same time are not compatible".into(),
        ));
    }
    Ok(c)
}

#[cfg(test)]
mod tests;
