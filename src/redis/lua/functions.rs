//! The Lua side of Redis 7.0 functions (`function_lua.c`): the load-time environment of
//! FUNCTION LOAD and `redis.register_function` in its positional and named forms (the
//! engine's loading and its run of a callback with `(keys, args)` are `LuaEngine`'s, in
//! lua.rs).
//!
//! A functions engine is a [`LuaEngine`] of its own (Redis keeps one Lua state for EVAL and
//! one for functions), built with the same sandbox. While a library's code runs, the
//! globals' `__index` points at the library API instead (a table holding only `redis`, with
//! `register_function`, `log`, the `LOG_*` levels and the version), as Redis switches its
//! globals' metatable; the callbacks the code defines keep the globals as their environment
//! and see the whole sandbox when they run.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{Function, Lua, MultiValue, Table, Value};

use super::flags::ScriptFlags;
use super::lauxlib::{Raise, c_str, find_raise, raise_table};

/// `functionsVerifyName`'s refusal, for a library's name and a function's.
pub const BAD_NAME: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// One function a library's code registered.
#[derive(Clone, Debug)]
pub struct Registered {
    pub name: Vec<u8>,
    pub description: Option<Vec<u8>>,
    pub flags: ScriptFlags,
    pub callback: Function,
}

/// What `register_function` collects while a library loads.
type LoadCtx = Rc<RefCell<Option<Vec<Registered>>>>;

/// The load-time globals and the context `register_function` fills.
pub(crate) struct LibraryApi {
    /// The table behind the load-time globals: only `redis`.
    pub(crate) globals: Table,
    // Invariant: `Some` exactly while a library's code runs (between `open` and `close`).
    ctx: LoadCtx,
}

/// `functionsVerifyName`: `[A-Za-z0-9_]+`.
pub fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

impl LibraryApi {
    /// Builds the library API (`luaEngineInitEngine`): its `redis` table shares `log` with
    /// the sandbox's; both tables refuse writes and answer a missing name with
    /// `Script attempted to access nonexistent global variable` (`luaSetErrorMetatable`).
    pub(crate) fn install(
        lua: &Lua,
        redis: &Table,
        freeze: &dyn Fn(Table, Table) -> mlua::Result<Table>,
        missing: &Function,
    ) -> mlua::Result<LibraryApi> {
        let ctx: LoadCtx = Rc::new(RefCell::new(None));
        let api_redis = lua.create_table()?;
        let c = ctx.clone();
        let register = lua.create_function(move |_, args: MultiValue| register(&c, args))?;
        api_redis.raw_set("register_function", register)?;
        for name in [
            "log",
            "LOG_DEBUG",
            "LOG_VERBOSE",
            "LOG_NOTICE",
            "LOG_WARNING",
            "REDIS_VERSION",
            "REDIS_VERSION_NUM",
        ] {
            api_redis.raw_set(name, redis.raw_get::<Value>(name)?)?;
        }
        let error_mt = lua.create_table()?;
        error_mt.raw_set("__index", missing.clone())?;
        api_redis.set_metatable(Some(error_mt.clone()))?;
        let globals = lua.create_table()?;
        globals.raw_set("redis", freeze(lua.create_table()?, api_redis)?)?;
        globals.set_metatable(Some(error_mt))?;
        Ok(LibraryApi { globals, ctx })
    }

    /// Opens the load context: `register_function` collects from now on.
    pub(crate) fn open(&self) {
        *self.ctx.borrow_mut() = Some(Vec::new());
    }

    /// Closes the load context, giving what was registered since `open`.
    pub(crate) fn close(&self) -> Vec<Registered> {
        self.ctx.borrow_mut().take().unwrap_or_default()
    }
}

/// The message of a failed library run, as Redis extracts it from the error value: a
/// string gets `ERR `, a raised `{err = ...}` table gives its `err`.
pub(crate) fn load_error_text(err: &mlua::Error) -> String {
    match find_raise(err) {
        Some(Raise::Table { msg, .. }) => String::from_utf8_lossy(c_str(msg)).into_owned(),
        Some(Raise::Msg(msg)) => format!("ERR {}", String::from_utf8_lossy(c_str(msg))),
        None => match err {
            mlua::Error::MemoryError(_) => "ERR not enough memory".to_string(),
            mlua::Error::RuntimeError(msg) => {
                let msg = msg.split("\nstack traceback:").next().unwrap_or_default();
                format!("ERR {msg}")
            }
            other => {
                let text = other.to_string();
                let msg = text.split("\nstack traceback:").next().unwrap_or_default();
                format!("ERR {msg}")
            }
        },
    }
}

/// `luaRegisterFunction`.
fn register(ctx: &LoadCtx, args: MultiValue) -> mlua::Result<()> {
    if ctx.borrow().is_none() {
        return Err(raise_table(
            "ERR redis.register_function can only be called on FUNCTION LOAD command",
        ));
    }
    let fail = |msg: &str| Err(raise_table(format!("ERR {msg}")));
    let registered = match args.len() {
        1 => named_args(&args)?,
        2 => positional_args(&args)?,
        _ => return fail("wrong number of arguments to redis.register_function"),
    };
    // functionLibCreateFunction: the name's form, then a name taken in this library
    // (compared exactly, as the library's own dict does).
    if !valid_name(&registered.name) {
        return fail(BAD_NAME);
    }
    let mut ctx = ctx.borrow_mut();
    let list = ctx.get_or_insert_with(Vec::new);
    if list.iter().any(|f| f.name == registered.name) {
        return fail("Function already exists in the library");
    }
    list.push(registered);
    Ok(())
}

/// `luaGetStringSds`: a string, or a number as Lua writes it (`lua_isstring`).
fn string_of(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(i) => Some(i.to_string().into_bytes()),
        Value::Number(n) => Some(super::libs::fmt_g(*n, 14).into_bytes()),
        _ => None,
    }
}

/// `luaRegisterFunctionReadPositionalArgs`: `(name, callback)`.
fn positional_args(args: &MultiValue) -> mlua::Result<Registered> {
    let Some(name) = args.front().and_then(string_of) else {
        return Err(raise_table(
            "ERR first argument to redis.register_function must be a string",
        ));
    };
    let Some(Value::Function(callback)) = args.get(1) else {
        return Err(raise_table(
            "ERR second argument to redis.register_function must be a function",
        ));
    };
    Ok(Registered {
        name,
        description: None,
        flags: ScriptFlags::default(),
        callback: callback.clone(),
    })
}

/// `luaRegisterFunctionReadNamedArgs`: `{function_name=, callback=, flags=, description=}`,
/// read in the table's `next` order (so the first bad field met is the one reported).
fn named_args(args: &MultiValue) -> mlua::Result<Registered> {
    let fail = |msg: &str| Err(raise_table(format!("ERR {msg}")));
    let Some(Value::Table(t)) = args.front() else {
        return fail(
            "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).",
        );
    };
    let (mut name, mut description, mut callback) = (None, None, None);
    let mut flags = ScriptFlags::default();
    for pair in t.clone().pairs::<Value, Value>() {
        let (key, value) = pair?;
        let Some(key) = string_of(&key) else {
            return fail("named argument key given to redis.register_function is not a string");
        };
        let key = c_str(&key).to_ascii_lowercase();
        match key.as_slice() {
            b"function_name" => match string_of(&value) {
                Some(s) => name = Some(s),
                None => {
                    return fail(
                        "function_name argument given to redis.register_function must be a string",
                    );
                }
            },
            b"description" => match string_of(&value) {
                Some(s) => description = Some(s),
                None => {
                    return fail(
                        "description argument given to redis.register_function must be a string",
                    );
                }
            },
            b"callback" => match value {
                Value::Function(f) => callback = Some(f),
                _ => {
                    return fail(
                        "callback argument given to redis.register_function must be a function",
                    );
                }
            },
            b"flags" => {
                let Value::Table(list) = value else {
                    return fail(
                        "flags argument to redis.register_function must be a table representing function flags",
                    );
                };
                if !read_flags(&list, &mut flags)? {
                    return fail("unknown flag given");
                }
            }
            _ => return fail("unknown argument given to redis.register_function"),
        }
    }
    let Some(name) = name else {
        return fail("redis.register_function must get a function name argument");
    };
    let Some(callback) = callback else {
        return fail("redis.register_function must get a callback argument");
    };
    Ok(Registered {
        name,
        description,
        flags,
        callback,
    })
}

/// `luaRegisterFunctionReadFlags`: the array part from 1 until the first nil, each a flag
/// name compared without case. False at the first value that is no flag.
fn read_flags(list: &Table, flags: &mut ScriptFlags) -> mlua::Result<bool> {
    // Bounded by the table's own size: a flag is read per element until a nil.
    for j in 1.. {
        let value: Value = list.get(j)?;
        if value.is_nil() {
            return Ok(true);
        }
        let Some(flag) = string_of(&value) else {
            return Ok(false);
        };
        if !flags.set(c_str(&flag), true) {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use crate::proto::reply::Reply;
    use crate::redis::lua::LuaEngine;

    #[test]
    fn a_library_registers_its_functions_with_their_flags_in_order() {
        let engine = LuaEngine::for_functions();
        let code = b"\nredis.register_function('a', function() return 1 end)\n\
            redis.register_function{function_name='b', callback=function() end, \
            flags={'no-writes', 'ALLOW-OOM'}, description='d'}";
        let got = engine.load_library(code).expect("loads");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].name, b"a");
        assert_eq!(got[1].description.as_deref(), Some(&b"d"[..]));
        assert_eq!(got[1].flags.names(), ["no-writes", "allow-oom"]);
    }

    #[test]
    fn load_time_code_sees_only_the_library_api_and_runtime_code_the_sandbox() {
        let engine = LuaEngine::for_functions();
        let err = engine
            .load_library(b"\nredis.call('get', 'x')")
            .expect_err("refused");
        assert_eq!(
            err,
            "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"
        );
        let got = engine
            .load_library(b"\nredis.register_function('t', function() return type(string) end)")
            .expect("loads");
        let reply = engine.run_callback(&got[0].callback, "t", &[], &[], &mut |_, _| Reply::Nil);
        assert_eq!(reply, Reply::Bulk(b"table".to_vec()));
    }

    #[test]
    fn an_endless_library_fails_as_a_load_timeout() {
        let engine = LuaEngine::for_functions();
        let err = engine
            .load_library(b"\nlocal i = 0 while true do i = i + 1 end")
            .expect_err("bounded");
        assert_eq!(
            err,
            "ERR Error registering functions: ERR FUNCTION LOAD timeout"
        );
        // The engine stays usable, with its globals back.
        assert!(
            engine
                .load_library(b"\nredis.register_function('f', function() end)")
                .is_ok()
        );
    }
}
