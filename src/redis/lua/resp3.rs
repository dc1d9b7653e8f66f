//! What a script sees of a command's reply after `redis.setresp(3)` (Redis 7.0's
//! `redisProtocolToLuaType` over a RESP3 reply): a null is `nil` (RESP2's is `false`), a map
//! is `{map = {field = value, ...}}`, a verbatim string `{verbatim_string = {format = 'txt',
//! string = ...}}`; everything else is as in RESP2.
//!
//! The model's replies are RESP2 values ([`Reply`]), so the RESP3 shape of a reply is a
//! property of the command that made it. Of the commands a script may call in the model,
//! only these two differ beyond their nulls: HGETALL answers a map, INFO a verbatim string
//! (checked against Redis 7.0.15 in tests/conformance/recorded/lua-resp3.txt). A command
//! added later that answers a map, a set, a double or a boolean in RESP3 belongs here too.

use mlua::{Lua, Value};

use crate::proto::reply::Reply;

/// The RESP2 conversion, for what RESP3 leaves as it is.
pub(super) type Resp2 = fn(&Lua, &Reply) -> mlua::Result<Value>;

/// `reply` as Lua sees it on a RESP3 script client; `command` is the name the script
/// called (any case); `resp2` converts what has no RESP3 form of its own.
pub(super) fn reply_to_lua(
    lua: &Lua,
    command: &[u8],
    reply: &Reply,
    resp2: Resp2,
) -> mlua::Result<Value> {
    match reply {
        Reply::Array(items) if command.eq_ignore_ascii_case(b"hgetall") => {
            // A map's pairs are set in the reply's order (the table's `next` order follows
            // from it, as in Redis's Lua).
            let map = lua.create_table()?;
            for pair in items.chunks(2) {
                if let [field, value] = pair {
                    map.raw_set(to_lua(lua, field, resp2)?, to_lua(lua, value, resp2)?)?;
                }
            }
            let t = lua.create_table()?;
            t.raw_set("map", map)?;
            Ok(Value::Table(t))
        }
        Reply::Bulk(text) if command.eq_ignore_ascii_case(b"info") => {
            let inner = lua.create_table()?;
            inner.raw_set("string", lua.create_string(text)?)?;
            inner.raw_set("format", "txt")?;
            let t = lua.create_table()?;
            t.raw_set("verbatim_string", inner)?;
            Ok(Value::Table(t))
        }
        other => to_lua(lua, other, resp2),
    }
}

/// The RESP3 conversion of a reply without a shape of its own: nulls are `nil` (a hole,
/// inside an array), the rest as RESP2's.
fn to_lua(lua: &Lua, reply: &Reply, resp2: Resp2) -> mlua::Result<Value> {
    match reply {
        Reply::Nil => Ok(Value::Nil),
        Reply::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                // Setting nil leaves a hole, as lua_settable does.
                t.raw_set(i + 1, to_lua(lua, item, resp2)?)?;
            }
            Ok(Value::Table(t))
        }
        other => resp2(lua, other),
    }
}
