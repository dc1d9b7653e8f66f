//! What the Lua C API and lauxlib give the C code Redis 7.0 runs inside its Lua (the `redis`
//! library, cjson, cmsgpack, bit, struct, functions' `register_function`), for the Rust
//! written in its place: raising a Lua error as `luaL_error`/`luaL_argerror` word it or as
//! Redis's `{err = ...}` tables, Lua's type names, and C's casts of a `lua_Number` as
//! x86-64 makes them. A leaf: it names nothing else of the crate, so every file of `lua`
//! can use it without importing another.

use std::fmt;

use mlua::{Lua, Value};

/// How a Rust-implemented library function raises a Lua error. mlua cannot raise an
/// arbitrary Lua value from Rust, so the value Redis would raise travels inside the error
/// and is rebuilt by the error handler (and by the `pcall` glue for scripts that catch it).
#[derive(Debug)]
pub(crate) enum Raise {
    /// Redis raises the table `{err = msg}` (luaPushError + luaError).
    Table { msg: Vec<u8>, ignore_stats: bool },
    /// Lua raises this string (luaL_error, luaG_runerror).
    Msg(Vec<u8>),
}

impl fmt::Display for Raise {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Raise::Table { msg, .. } | Raise::Msg(msg) => {
                f.write_str(&String::from_utf8_lossy(msg))
            }
        }
    }
}

impl std::error::Error for Raise {}

pub(crate) fn raise_table(msg: impl Into<Vec<u8>>) -> mlua::Error {
    mlua::Error::external(Raise::Table {
        msg: msg.into(),
        ignore_stats: false,
    })
}

pub(crate) fn raise_msg(msg: impl Into<Vec<u8>>) -> mlua::Error {
    mlua::Error::external(Raise::Msg(msg.into()))
}

/// The [`Raise`] inside an error coming back from Lua, through mlua's callback wrapping.
pub(crate) fn find_raise(err: &mlua::Error) -> Option<&Raise> {
    match err {
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => {
            find_raise(cause)
        }
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<Raise>(),
        _ => None,
    }
}

/// `luaL_where`: the `chunk:line: ` prefix of the function at `level`, or nothing.
pub(crate) fn lua_where(lua: &Lua, level: usize) -> Vec<u8> {
    lua.inspect_stack(level, |d| match d.current_line() {
        Some(line) if line > 0 => {
            let short_src = d
                .source()
                .short_src
                .map(|s| s.into_owned())
                .unwrap_or_default();
            format!("{short_src}:{line}: ")
        }
        _ => String::new(),
    })
    .unwrap_or_default()
    .into_bytes()
}

/// `luaL_error` from inside a Rust library function.
pub(crate) fn lua_error(lua: &Lua, msg: &str) -> mlua::Error {
    raise_msg([lua_where(lua, 1), msg.as_bytes().to_vec()].concat())
}

/// `luaL_argerror`, naming the function the way the calling instruction did.
pub(crate) fn arg_error(lua: &Lua, narg: usize, extramsg: &str) -> mlua::Error {
    let names = lua.inspect_stack(0, |d| {
        let names = d.names();
        (
            names.name.map(|n| n.into_owned()),
            names.name_what.map(str::to_string),
        )
    });
    let (name, what) = names.unwrap_or((None, None));
    let mut narg = narg;
    if what.as_deref() == Some("method") {
        narg -= 1;
        if narg == 0 {
            let name = name.unwrap_or_default();
            return lua_error(lua, &format!("calling '{name}' on bad self ({extramsg})"));
        }
    }
    let name = name.unwrap_or_else(|| "?".to_string());
    lua_error(
        lua,
        &format!("bad argument #{narg} to '{name}' ({extramsg})"),
    )
}

/// Lua's type names, with "no value" for a missing argument.
pub(crate) fn type_name(value: Option<&Value>) -> &'static str {
    match value {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::Integer(_) | Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        Some(_) => "userdata",
    }
}

/// `(long long)` of a double as x86-64 computes it: out of range and NaN give i64::MIN.
pub(crate) fn number_to_i64(n: f64) -> i64 {
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// `(int)` of a double as x86-64 computes it.
pub(crate) fn number_to_i32(n: f64) -> i32 {
    if !(-2_147_483_648.0..2_147_483_648.0).contains(&n) {
        i32::MIN
    } else {
        n as i32
    }
}

/// The part of `bytes` a C string function sees.
pub(crate) fn c_str(bytes: &[u8]) -> &[u8] {
    match bytes.iter().position(|&b| b == 0) {
        Some(nul) => &bytes[..nul],
        None => bytes,
    }
}
