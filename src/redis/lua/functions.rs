//! The Lua side of Redis 7.0 functions (`function_lua.c`): the load-time environment of
//! FUNCTION LOAD, `redis.register_function` in its positional and named forms, and the run
//! of a registered callback with `(keys, args)`.
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

use super::{
    LuaEngine, Raise, SCRIPT_INSTRUCTION_BUDGET, ScriptFlags, c_str, compile_error_text,
    find_raise, raise_table,
};
use crate::proto::reply::Reply;

/// Redis loads a library's code under this chunk name: `user_function:2: ...` messages.
const FUNCTION_CHUNK_NAME: &str = "@user_function";
/// The hook interval of the load-time budget (Redis checks its 500 ms timeout every
/// 100,000 instructions).
const LOAD_HOOK_EVERY: u32 = 100_000;
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
    globals: Table,
    // Invariant: `Some` exactly while a library's code runs (`load_library`).
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
}

impl LuaEngine {
    /// A functions engine: the sandbox, plus the library API for FUNCTION LOAD.
    pub fn for_functions() -> LuaEngine {
        // Only an allocation failure while building a fresh state can get here.
        Self::build(true).expect("cannot create the Lua functions state")
    }

    /// `luaEngineCreate`: compiles a library's code (what follows its `#!lua` line, from
    /// that line's line feed) and runs it in the library API, giving the functions it
    /// registered, or the error FUNCTION LOAD answers (full text).
    pub fn load_library(&self, code: &[u8]) -> Result<Vec<Registered>, String> {
        let Some(api) = &self.library else {
            return Err("ERR the EVAL engine does not load libraries".to_string());
        };
        // Redis's Lua never loads bytecode: its parser reads the signature byte as text.
        if code.first() == Some(&0x1b) {
            return Err(compile_error_text(
                "Error compiling function: ",
                b"user_function:1: unexpected symbol near 'char(27)'",
            ));
        }
        let chunk = self
            .lua
            .load(code)
            .set_name(FUNCTION_CHUNK_NAME)
            .set_mode(mlua::ChunkMode::Text)
            .into_function()
            .map_err(|err| {
                let msg = match err {
                    mlua::Error::SyntaxError { message, .. } => message,
                    other => other.to_string(),
                };
                compile_error_text("Error compiling function: ", msg.as_bytes())
            })?;
        let outcome = self.with_library_api(api, || self.run_load(&chunk));
        let registered = api.ctx.borrow_mut().take().unwrap_or_default();
        outcome.map_err(|msg| format!("ERR Error registering functions: {msg}"))?;
        Ok(registered)
    }

    /// Runs `body` with the globals' `__index` on the library API and the load context
    /// open, and puts both back whatever happens.
    fn with_library_api<T>(&self, api: &LibraryApi, body: impl FnOnce() -> T) -> T {
        let globals_mt = self.lua.globals().metatable();
        if let Some(mt) = &globals_mt {
            let _ = mt.raw_set("__index", api.globals.clone());
        }
        *api.ctx.borrow_mut() = Some(Vec::new());
        let out = body();
        if let Some(mt) = &globals_mt {
            let _ = mt.raw_set("__index", self.globals.clone());
        }
        out
    }

    /// The protected run of a library's code, bounded like a script: past the budget it
    /// fails as Redis's 500 ms load timeout does. Err is the error's message as
    /// `luaExtractErrorInformation` gives it.
    fn run_load(&self, chunk: &Function) -> Result<(), String> {
        let ticks = Rc::new(std::cell::Cell::new(0u64));
        let t = ticks.clone();
        let hooked = self.lua.set_hook(
            mlua::HookTriggers::new().every_nth_instruction(LOAD_HOOK_EVERY),
            move |_, _| {
                t.set(t.get() + 1);
                if t.get() * u64::from(LOAD_HOOK_EVERY) > SCRIPT_INSTRUCTION_BUDGET {
                    return Err(raise_table("ERR FUNCTION LOAD timeout"));
                }
                Ok(mlua::VmState::Continue)
            },
        );
        if hooked.is_err() {
            return Err("ERR FUNCTION LOAD timeout".to_string());
        }
        let result = chunk.call::<()>(());
        self.lua.remove_hook();
        result.map_err(|err| load_error_text(&err))
    }

    /// Runs a registered callback for FCALL: `name` is the function's, which its errors
    /// carry (` script: name, on @user_function:N.`).
    pub fn run_callback(
        &self,
        callback: &Function,
        name: &str,
        keys: &[Vec<u8>],
        args: &[Vec<u8>],
        call: &mut dyn FnMut(&[Vec<u8>], bool) -> Reply,
    ) -> Reply {
        self.run_compiled(callback, name, keys, args, call, true)
    }
}

/// The message of a failed library run, as Redis extracts it from the error value: a
/// string gets `ERR `, a raised `{err = ...}` table gives its `err`.
fn load_error_text(err: &mlua::Error) -> String {
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
    use super::*;

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
