//! The texts of the lock scripts most libraries send, in both quote styles (the Redis docs use
//! double quotes, many libraries single quotes). They are wire data both sides agree on: a
//! client sends them, and the server recognises them by SHA1 (`redis::scripts`) and runs
//! them natively; any other text runs in Lua.

/// Compare-and-delete (the safe unlock).
pub const UNLOCK_SRC: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;
/// Compare-and-pexpire (extend).
pub const EXTEND_SRC: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end"#;
pub const UNLOCK_SRC_SQ: &str = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end";
pub const EXTEND_SRC_SQ: &str = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('pexpire',KEYS[1],ARGV[2]) else return 0 end";
