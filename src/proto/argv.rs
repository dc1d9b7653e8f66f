//! Commands back to argument vectors: what the trace shows, what replication offsets count
//! (the RESP length of the effect sent), what a Lua round trip and an error text read.

use crate::proto::bytes::Bytes;
use crate::proto::command::{
    ClientCmd, Command, FunctionCmd, GetExOpt, ScriptRef, SetCond, SetExpiry, hex,
};

impl Command {
    /// The name Redis gives the command in its errors: `script|load`, `client|id`, or the
    /// lower-case name of a command without subcommands.
    pub fn full_name(&self) -> String {
        let argv = self.to_argv();
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        match (name.as_str(), argv.get(1)) {
            ("script" | "object" | "client" | "function", Some(sub)) => {
                format!(
                    "{name}|{}",
                    String::from_utf8_lossy(sub).to_ascii_lowercase()
                )
            }
            _ => name,
        }
    }

    /// The argument vector this command would be sent as (for traces and Lua round trips).
    pub fn to_argv(&self) -> Vec<Bytes> {
        let b = |s: &str| Bytes::from_slice(s.as_bytes());
        let n = |i: i64| Bytes::from_slice(i.to_string().as_bytes());
        match self {
            Command::Ping(m) => {
                let mut v = vec![b("PING")];
                v.extend(m.iter().cloned());
                v
            }
            Command::Get(k) => vec![b("GET"), k.clone()],
            Command::Set {
                key,
                value,
                cond,
                get,
                expiry,
            } => {
                let mut v = vec![b("SET"), key.clone(), value.clone()];
                match cond {
                    Some(SetCond::Nx) => v.push(b("NX")),
                    Some(SetCond::Xx) => v.push(b("XX")),
                    None => {}
                }
                if *get {
                    v.push(b("GET"));
                }
                match expiry {
                    Some(SetExpiry::Ex(x)) => v.extend([b("EX"), n(*x)]),
                    Some(SetExpiry::Px(x)) => v.extend([b("PX"), n(*x)]),
                    Some(SetExpiry::ExAt(x)) => v.extend([b("EXAT"), n(*x)]),
                    Some(SetExpiry::PxAt(x)) => v.extend([b("PXAT"), n(*x)]),
                    Some(SetExpiry::KeepTtl) => v.push(b("KEEPTTL")),
                    None => {}
                }
                v
            }
            Command::SetNx(k, val) => vec![b("SETNX"), k.clone(), val.clone()],
            Command::Del(keys) => std::iter::once(b("DEL"))
                .chain(keys.iter().cloned())
                .collect(),
            Command::Exists(keys) => std::iter::once(b("EXISTS"))
                .chain(keys.iter().cloned())
                .collect(),
            Command::Expire {
                kind,
                key,
                when,
                cond,
            } => {
                let mut v = vec![
                    Bytes::from_slice(kind.name().to_ascii_uppercase().as_bytes()),
                    key.clone(),
                    n(*when),
                ];
                for (on, s) in [
                    (cond.nx, "NX"),
                    (cond.xx, "XX"),
                    (cond.gt, "GT"),
                    (cond.lt, "LT"),
                ] {
                    if on {
                        v.push(b(s));
                    }
                }
                v
            }
            Command::Ttl { key, ms } => vec![b(if *ms { "PTTL" } else { "TTL" }), key.clone()],
            Command::ExpireTime { key, ms } => {
                vec![
                    b(if *ms { "PEXPIRETIME" } else { "EXPIRETIME" }),
                    key.clone(),
                ]
            }
            Command::Persist(k) => vec![b("PERSIST"), k.clone()],
            Command::IncrBy(k, 1) => vec![b("INCR"), k.clone()],
            Command::IncrBy(k, by) => vec![b("INCRBY"), k.clone(), n(*by)],
            Command::DecrBy(k, by) => vec![b("DECRBY"), k.clone(), n(*by)],
            Command::Eval {
                script,
                keys,
                args,
                read_only,
            } => {
                let (name, body) = match script {
                    ScriptRef::Source(s) => ("EVAL", Bytes::from_slice(&s.source)),
                    ScriptRef::Sha(Some(sha)) => {
                        ("EVALSHA", Bytes::from_slice(hex(sha).as_bytes()))
                    }
                    ScriptRef::Sha(None) => ("EVALSHA", b("?")),
                };
                let name = if *read_only {
                    format!("{name}_RO")
                } else {
                    name.to_string()
                };
                let mut v = vec![
                    Bytes::from_slice(name.as_bytes()),
                    body,
                    n(keys.len() as i64),
                ];
                v.extend(keys.iter().cloned());
                v.extend(args.iter().cloned());
                v
            }
            Command::ScriptLoad(s) => vec![b("SCRIPT"), b("LOAD"), s.clone()],
            Command::ScriptExists(s) => [b("SCRIPT"), b("EXISTS")]
                .into_iter()
                .chain(s.iter().cloned())
                .collect(),
            Command::ScriptFlush => vec![b("SCRIPT"), b("FLUSH")],
            Command::FlushAll => vec![b("FLUSHALL")],
            Command::DbSize => vec![b("DBSIZE")],
            Command::Keys(p) => vec![b("KEYS"), p.clone()],
            Command::Type(k) => vec![b("TYPE"), k.clone()],
            Command::RPush(k, vals) => [b("RPUSH"), k.clone()]
                .into_iter()
                .chain(vals.iter().cloned())
                .collect(),
            Command::DebugSetActiveExpire(on) => {
                vec![
                    b("DEBUG"),
                    b("SET-ACTIVE-EXPIRE"),
                    b(if *on { "1" } else { "0" }),
                ]
            }
            Command::ReplicaOf(None) => vec![b("REPLICAOF"), b("NO"), b("ONE")],
            Command::ReplicaOf(Some((h, p))) => vec![b("REPLICAOF"), h.clone(), p.clone()],
            Command::Wait {
                replicas,
                timeout_ms,
            } => vec![b("WAIT"), n(*replicas), n(*timeout_ms)],
            Command::Select(db) => vec![b("SELECT"), n(*db)],
            Command::Role => vec![b("ROLE")],
            Command::HSet(k, pairs) => {
                let mut v = vec![b("HSET"), k.clone()];
                for (f, val) in pairs {
                    v.push(f.clone());
                    v.push(val.clone());
                }
                v
            }
            Command::HGet(k, f) => vec![b("HGET"), k.clone(), f.clone()],
            Command::HExists(k, f) => vec![b("HEXISTS"), k.clone(), f.clone()],
            Command::HIncrBy(k, f, by) => vec![b("HINCRBY"), k.clone(), f.clone(), n(*by)],
            Command::HIncrByFloat(k, f, by) => {
                vec![b("HINCRBYFLOAT"), k.clone(), f.clone(), by.clone()]
            }
            Command::HDel(k, fields) => [b("HDEL"), k.clone()]
                .into_iter()
                .chain(fields.iter().cloned())
                .collect(),
            Command::HGetAll(k) => vec![b("HGETALL"), k.clone()],
            Command::HLen(k) => vec![b("HLEN"), k.clone()],
            Command::HMGet(k, fields) => [b("HMGET"), k.clone()]
                .into_iter()
                .chain(fields.iter().cloned())
                .collect(),
            Command::GetDel(k) => vec![b("GETDEL"), k.clone()],
            Command::GetEx(k, opt) => {
                let mut v = vec![b("GETEX"), k.clone()];
                match opt {
                    None => {}
                    Some(GetExOpt::Persist) => v.push(b("PERSIST")),
                    Some(GetExOpt::Expiry(unit, raw)) => v.extend([b(unit.name()), raw.clone()]),
                }
                v
            }
            Command::Time => vec![b("TIME")],
            Command::Publish(ch, m) => vec![b("PUBLISH"), ch.clone(), m.clone()],
            Command::FlushDb => vec![b("FLUSHDB")],
            Command::Multi => vec![b("MULTI")],
            Command::Exec => vec![b("EXEC")],
            Command::Discard => vec![b("DISCARD")],
            Command::Watch(keys) => std::iter::once(b("WATCH"))
                .chain(keys.iter().cloned())
                .collect(),
            Command::Unwatch => vec![b("UNWATCH")],
            Command::Subscribe { names, pattern } => {
                [b(if *pattern { "PSUBSCRIBE" } else { "SUBSCRIBE" })]
                    .into_iter()
                    .chain(names.iter().cloned())
                    .collect()
            }
            Command::Unsubscribe { names, pattern } => [b(if *pattern {
                "PUNSUBSCRIBE"
            } else {
                "UNSUBSCRIBE"
            })]
            .into_iter()
            .chain(names.iter().cloned())
            .collect(),
            Command::StrLen(k) => vec![b("STRLEN"), k.clone()],
            Command::Append(k, v) => vec![b("APPEND"), k.clone(), v.clone()],
            Command::SetRange(k, off, v) => vec![b("SETRANGE"), k.clone(), off.clone(), v.clone()],
            Command::Rename { keys, nx } => vec![
                b(if *nx { "RENAMENX" } else { "RENAME" }),
                keys[0].clone(),
                keys[1].clone(),
            ],
            Command::Copy { keys, opts } => [b("COPY"), keys[0].clone(), keys[1].clone()]
                .into_iter()
                .chain(opts.iter().cloned())
                .collect(),
            Command::ObjectEncoding(k) => vec![b("OBJECT"), b("ENCODING"), k.clone()],
            Command::Echo(m) => vec![b("ECHO"), m.clone()],
            Command::HKeys(k) => vec![b("HKEYS"), k.clone()],
            Command::HVals(k) => vec![b("HVALS"), k.clone()],
            Command::HSetNx(k, f, v) => vec![b("HSETNX"), k.clone(), f.clone(), v.clone()],
            Command::HStrLen(k, f) => vec![b("HSTRLEN"), k.clone(), f.clone()],
            Command::HMSet(k, pairs) => {
                let mut v = vec![b("HMSET"), k.clone()];
                for (f, val) in pairs {
                    v.push(f.clone());
                    v.push(val.clone());
                }
                v
            }
            Command::LPush(k, vals) => [b("LPUSH"), k.clone()]
                .into_iter()
                .chain(vals.iter().cloned())
                .collect(),
            Command::LPop(k, rest) => [b("LPOP"), k.clone()]
                .into_iter()
                .chain(rest.iter().cloned())
                .collect(),
            Command::LLen(k) => vec![b("LLEN"), k.clone()],
            Command::ClusterReadMode(ro) => vec![b(if *ro { "READONLY" } else { "READWRITE" })],
            Command::Auth { user, password } => {
                let mut v = vec![b("AUTH")];
                v.extend(user.iter().cloned());
                v.push(password.clone());
                v
            }
            Command::RandomKey => vec![b("RANDOMKEY")],
            Command::Move { key, db } => vec![b("MOVE"), key.clone(), db.clone()],
            Command::SwapDb([a, c]) => vec![b("SWAPDB"), a.clone(), c.clone()],
            Command::Hello(args) => std::iter::once(b("HELLO"))
                .chain(args.iter().cloned())
                .collect(),
            Command::Client(ClientCmd::Id) => vec![b("CLIENT"), b("ID")],
            Command::Client(ClientCmd::GetName) => vec![b("CLIENT"), b("GETNAME")],
            Command::Client(ClientCmd::SetName(name)) => {
                vec![b("CLIENT"), b("SETNAME"), name.clone()]
            }
            Command::Info(sections) => std::iter::once(b("INFO"))
                .chain(sections.iter().cloned())
                .collect(),
            Command::BLPop { keys, timeout } => std::iter::once(b("BLPOP"))
                .chain(keys.iter().cloned())
                .chain([timeout.clone()])
                .collect(),
            Command::Function(sub) => {
                let (name, rest): (Bytes, &[Bytes]) = match sub {
                    FunctionCmd::Load(args) => (b("LOAD"), args),
                    FunctionCmd::Delete(lib) => (b("DELETE"), std::slice::from_ref(lib)),
                    FunctionCmd::List(args) => (b("LIST"), args),
                    FunctionCmd::Flush { typed, args } => (typed.clone(), args),
                };
                [b("FUNCTION"), name]
                    .into_iter()
                    .chain(rest.iter().cloned())
                    .collect()
            }
            Command::FCall {
                function,
                numkeys,
                rest,
                read_only,
            } => [
                b(if *read_only { "FCALL_RO" } else { "FCALL" }),
                function.clone(),
                numkeys.clone(),
            ]
            .into_iter()
            .chain(rest.iter().cloned())
            .collect(),
        }
    }
}
