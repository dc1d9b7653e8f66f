//! EVAL scripting: runs Redis scripts in a real Lua 5.1 (through `mlua`) and reproduces
//! Redis 7.0.15's scripting rules and error texts.
//!
//! The Redis side of a script (its keyspace, its commands) belongs to the host, which hands
//! [`LuaEngine::run`] a closure executing one command. Everything else that is visible to a
//! script is reproduced here: the sandboxed globals (read-only, as Redis 7.0 makes them), the
//! `redis` library, the `pcall` Redis overrides, the deterministic `math.random`, the
//! conversions between Redis replies and Lua values, and the error handler that decorates
//! errors with ` script: <sha>, on @user_script:<line>.`.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;

mod flags;
pub mod functions;
mod lauxlib;
mod libs;
mod resp3;
mod struct_lib;

pub use flags::{ScriptFlags, shebang_flags};
pub(crate) use lauxlib::{arg_error, lua_error, raise_msg, type_name};

use flags::strip_shebang;
use lauxlib::{Raise, c_str, find_raise, lua_where, number_to_i32, number_to_i64, raise_table};

use mlua::{
    ChunkMode, Function, Lua, LuaOptions, MultiValue, StdLib, String as LuaString, Table, Value,
};
use sha1::{Digest, Sha1};

use crate::proto::reply::Reply;

/// Redis loads every EVAL body under this chunk name, hence `user_script:1: ...` messages.
const CHUNK_NAME: &str = "@user_script";
/// Name of the few lines of Lua glue, so that they never pass for the user's script.
const GLUE_CHUNK_NAME: &str = "=redis";
const REDIS_VERSION: &str = "7.0.15";
const REDIS_VERSION_NUM: i64 = 0x0007_000f;
/// Stack level of the function that raised an error, seen from the error handler: mlua's
/// panic-safe `xpcall` calls the handler through a C trampoline, which is level 1.
const RAISER_LEVEL: usize = 2;
/// `REDIS_LRAND48_MAX` (INT32_MAX) in Redis's math.random.
const LRAND48_MAX: i64 = 0x7fff_ffff;
/// The static state of Redis's rand.c before any `redisSrand48` (X2 X1 X0).
const LRAND48_INITIAL: u64 = 0x1234_abcd_330e;
/// The base-library globals Redis 7.0 lets scripts see as they are (its allow list minus
/// the libraries and the functions replaced below); `print`, `dofile` and `loadfile` are
/// denied.
const KEPT_BUILTINS: [&str; 18] = [
    "tostring",
    "getfenv",
    "assert",
    "tonumber",
    "rawequal",
    "collectgarbage",
    "getmetatable",
    "type",
    "select",
    "unpack",
    "gcinfo",
    "loadstring",
    "ipairs",
    "_VERSION",
    "setfenv",
    "load",
    "error",
    "newproxy",
];

/// Lua-side helpers: Redis's `pcall` override and the `xpcall` / `coroutine.resume`
/// wrappers, which hand Lua code the value Redis would raise instead of mlua's error
/// userdata (they must pass on however many values the protected call returned), and the
/// walk of a script's result for [`flat_to_reply`].
const GLUE: &str = r#"
local rawpcall, rawxpcall, rawresume, unwrap, select, type, error, getmetatable, string_proxy,
  rawget, next = ...
getmetatable('').__index = string_proxy

local function pcall_done(ok, ...)
  if ok then return true, ... end
  local e = unwrap((...))
  if type(e) == 'table' then
    local m = e.err
    if type(m) == 'string' or type(m) == 'number' then e = m end
  end
  return false, e
end
local function pcall(...)
  -- Redis's pcall, given nothing, calls the `true` it pushed as its result placeholder.
  if select('#', ...) == 0 then return false, 'attempt to call a boolean value' end
  return pcall_done(rawpcall(...))
end

local function xpcall(...)
  if select('#', ...) < 2 then error("bad argument #2 to 'xpcall' (value expected)", 2) end
  local f, handler = ...
  return rawxpcall(f, function(e) return handler(unwrap(e)) end)
end

local function resume_done(ok, ...)
  if ok then return true, ... end
  return false, unwrap((...))
end
local function resume(...)
  if type((...)) ~= 'thread' then error("bad argument #1 to 'resume' (coroutine expected)", 2) end
  return resume_done(rawresume(...))
end

-- A function's callback takes (keys, args); xpcall passes nothing, so it calls this closure
-- (a tail call: the callback's errors are located in the callback).
local function bind(f, keys, args)
  return function() return f(keys, args) end
end

-- luaReplyToRedisReply's walk, written out as a flat list of (tag, value) pairs so that
-- Rust never holds more than one Lua value of a deeply nested result at a time (mlua
-- keeps each live handle in a stack of at most ~8000 slots). `height` is what lua_gettop
-- would be in Redis while converting `v` (the error handler and the result at the top):
-- once lua_checkstack(4) would pass LUAI_MAXCSTACK (8000), Redis replies "reached lua
-- stack limit" for that element, which ends the walk of self-referencing tables.
local function flatten(v, height, out, n)
  if height + 4 > 8000 then
    out[n + 1] = 'L'
    return n + 1
  end
  local t = type(v)
  if t == 'string' then
    out[n + 1], out[n + 2] = 'b', v
    return n + 2
  elseif t == 'number' then
    out[n + 1], out[n + 2] = 'n', v
    return n + 2
  elseif t == 'boolean' then
    out[n + 1] = v and 't' or 'F'
    return n + 1
  elseif t ~= 'table' then
    out[n + 1] = 'f'
    return n + 1
  end
  local x = rawget(v, 'err')
  if type(x) == 'string' then
    out[n + 1], out[n + 2] = 'E', x
    return n + 2
  end
  x = rawget(v, 'ok')
  if type(x) == 'string' then
    out[n + 1], out[n + 2] = 'S', x
    return n + 2
  end
  x = rawget(v, 'double')
  if type(x) == 'number' then
    out[n + 1], out[n + 2] = 'D', x
    return n + 2
  end
  x = rawget(v, 'big_number')
  if type(x) == 'string' then
    out[n + 1], out[n + 2] = 'B', x
    return n + 2
  end
  x = rawget(v, 'verbatim_string')
  if type(x) == 'table' then
    local format, s = rawget(x, 'format'), rawget(x, 'string')
    if type(format) == 'string' and type(s) == 'string' then
      out[n + 1], out[n + 2] = 'b', s
      return n + 2
    end
  end
  n = n + 1
  out[n] = '['
  x = rawget(v, 'map')
  if type(x) == 'table' then
    for key, value in next, x do
      n = flatten(key, height + 3, out, n)
      n = flatten(value, height + 3, out, n)
    end
  else
    local set = rawget(v, 'set')
    if type(set) == 'table' then
      for key in next, set do
        n = flatten(key, height + 3, out, n)
      end
    else
      local j = 1
      x = rawget(v, 1)
      while x ~= nil do
        n = flatten(x, height + 1, out, n)
        j = j + 1
        x = rawget(v, j)
      end
    end
  end
  out[n + 1] = ']'
  return n + 1
end
local function flatten_result(v)
  local out = {}
  return out, flatten(v, 2, out, 0)
end

return pcall, xpcall, resume, flatten_result, bind
"#;

/// The host's command closure, shared by redis.call and redis.pcall.
type Host<'a> = RefCell<&'a mut dyn FnMut(&[Vec<u8>], bool) -> Reply>;

/// A panic of the host's command closure, carried across Lua to be resumed by `run`.
type HostPanic = RefCell<Option<Box<dyn Any + Send>>>;

/// Read-only proxies and the tables behind them. Redis 7.0 marks every table reachable
/// from the globals read-only inside its patched Lua; stock Lua 5.1 can only get there
/// with empty proxy tables whose metatable forwards reads and refuses writes.
#[derive(Default)]
struct Frozen {
    pairs: RefCell<Vec<(Table, Table)>>,
}

impl Frozen {
    fn real_of(&self, proxy: &Table) -> Option<Table> {
        let ptr = proxy.to_pointer();
        self.pairs
            .borrow()
            .iter()
            .find(|(p, _)| p.to_pointer() == ptr)
            .map(|(_, real)| real.clone())
    }

    fn contains(&self, t: &Table) -> bool {
        self.real_of(t).is_some()
    }
}

/// A Redis 7.0 scripting engine: one Lua state, its sandbox, and the compiled scripts.
/// Lua instructions one script may run before the simulator aborts it. Redis itself would
/// run it to the end (answering BUSY to others after `lua-time-limit`); a simulator that
/// waited would hang, so this is a documented bound of the model.
pub const SCRIPT_INSTRUCTION_BUDGET: u64 = 50_000_000;
const SCRIPT_HOOK_EVERY: u32 = 10_000;

/// Bytes one node's Lua state may hold (the sandbox itself takes ~100 KB). Redis 7.0 puts
/// no cap on its Lua heap and a script that exhausts the machine's memory gets Lua's
/// "not enough memory"; here the cap stands for the machine, so that one script (a single
/// `string.rep` is one instruction) cannot allocate without limit. The count is of the
/// bytes Lua asks its allocator for, so where a script hits it is deterministic.
pub const SCRIPT_MEMORY_LIMIT_BYTES: usize = 64 << 20;
/// Lua 5.1 has no emergency collection: an allocation over the cap fails even when most
/// of the heap is garbage. A state left above this after a script is collected in full,
/// so that the next script starts well below the cap, as on a server with free memory.
const SCRIPT_MEMORY_COLLECT_ABOVE: usize = SCRIPT_MEMORY_LIMIT_BYTES / 4;
/// Lua 5.1's `MEMERRMSG`: the error object of an allocation failure, which skips the
/// error handler, so EVAL replies `Error running script <sha>, not enough memory`.
const LUA_MEMORY_ERROR: &[u8] = b"not enough memory";

fn over_budget() -> String {
    format!(
        "script exceeded the simulator's budget of {SCRIPT_INSTRUCTION_BUDGET} Lua instructions"
    )
}

pub struct LuaEngine {
    lua: Lua,
    /// Compiled scripts by lower-case hex SHA1, as Redis keeps them until SCRIPT FLUSH.
    scripts: RefCell<BTreeMap<String, Function>>,
    /// The table behind the read-only `_G`: KEYS and ARGV are stored here for each run.
    globals: Table,
    /// The table behind the read-only `redis`: call and pcall are bound here for each run.
    redis: Table,
    xpcall: Function,
    handler: Function,
    /// Lua side of the result conversion, see [`flat_to_reply`].
    flatten: Function,
    /// `bind` of [`GLUE`]: a function callback with its `(keys, args)`.
    bind: Function,
    /// The load-time environment of FUNCTION LOAD (a functions engine only).
    library: Option<functions::LibraryApi>,
    /// The state of `math.random`, which carries over from script to script.
    rng: Rc<Cell<u64>>,
    /// `redis.setresp(3)` was called in the running script (each starts on RESP2).
    resp3: Rc<Cell<bool>>,
}

/// A Lua state cannot be copied; what a script can see of one can be rebuilt. The globals
/// are read-only (Redis 7.0 sandbox), KEYS and ARGV are set afresh for every run and
/// compiled functions are a cache (recompiled from source on a miss), so the one thing that
/// carries over between scripts is `math.random`'s state: a fresh state with that state is
/// indistinguishable to every script. (Only where Lua's allocator would hit the memory cap,
/// which counts garbage too, could the copy differ; the copy starts with less garbage.)
impl Clone for LuaEngine {
    fn clone(&self) -> LuaEngine {
        let engine = LuaEngine::new();
        engine.rng.set(self.rng.get());
        engine
    }
}

impl fmt::Debug for LuaEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LuaEngine")
            .field("scripts", &self.scripts.borrow().keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Default for LuaEngine {
    fn default() -> Self {
        Self::new()
    }
}

impl LuaEngine {
    pub fn new() -> LuaEngine {
        // Only an allocation failure while building a fresh state can get here.
        Self::build(false).expect("cannot create the Lua scripting state")
    }

    /// Compiles without running (used by SCRIPT LOAD and by EVAL before running).
    /// Err is the full Redis error message, e.g.
    /// "ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'"
    pub fn compile(&self, source: &[u8]) -> Result<(), String> {
        let sha = hex(&Sha1::digest(source));
        self.function(source, &sha).map(|_| ())
    }

    /// Runs `source` (whose lower-case hex SHA1 is `sha1_hex`) with KEYS and ARGV.
    /// `call(argv, raise)` executes one Redis command for redis.call/redis.pcall: argv[0] is the
    /// command name as the script gave it; it returns the command's Reply (errors as Reply::Error
    /// with full text). `raise` is true for redis.call, false for pcall (informational; the
    /// host does not need it to decide the text).
    pub fn run(
        &self,
        source: &[u8],
        sha1_hex: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        call: &mut dyn FnMut(&[Vec<u8>], bool) -> Reply,
    ) -> Reply {
        let func = match self.function(source, sha1_hex) {
            Ok(func) => func,
            Err(err) => return Reply::Error(err),
        };
        self.run_compiled(&func, sha1_hex, keys, argv, call, false)
    }

    /// Runs a compiled script (`as_callback`: false, KEYS and ARGV set as globals) or a
    /// function's callback (true: called with the tables `(keys, args)`). `label` names it
    /// in errors: the SHA1 of a script, the name of a function.
    fn run_compiled(
        &self,
        func: &Function,
        label: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        call: &mut dyn FnMut(&[Vec<u8>], bool) -> Reply,
        as_callback: bool,
    ) -> Reply {
        let sha1_hex = label;
        let host_panic = RefCell::new(None);
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            self.invoke(func, sha1_hex, keys, argv, call, &host_panic, as_callback)
        }));
        if self.lua.used_memory() > SCRIPT_MEMORY_COLLECT_ABOVE {
            // Deterministic: the heap's contents are a function of the scripts run.
            let _ = self.lua.gc_collect();
        }
        // A panic of the host is its own bug: hand it back instead of hiding it in a reply.
        if let Some(payload) = host_panic.into_inner() {
            panic::resume_unwind(payload);
        }
        match outcome {
            Ok(Ok(reply)) => reply,
            // Only failures outside the script's protected call (out of memory) land here.
            Ok(Err(mlua::Error::MemoryError(_))) => {
                Reply::Error(running_error(sha1_hex, LUA_MEMORY_ERROR))
            }
            Ok(Err(err)) => Reply::Error(running_error(sha1_hex, err.to_string().as_bytes())),
            // mlua panics when a call passes more values than its ~8000 handle slots
            // (e.g. redis.call(unpack(t)) with #t near 8000). mlua carries the panic
            // through Lua as an error, so the state is unwound and stays usable.
            Err(payload) => {
                let what = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Reply::Error(running_error(
                    sha1_hex,
                    format!("script engine limit: {what}").as_bytes(),
                ))
            }
        }
    }

    fn function(&self, source: &[u8], sha: &str) -> Result<Function, String> {
        if let Some(func) = self.scripts.borrow().get(sha) {
            return Ok(func.clone());
        }
        let func = self.load(source)?;
        self.scripts
            .borrow_mut()
            .insert(sha.to_string(), func.clone());
        Ok(func)
    }

    fn load(&self, source: &[u8]) -> Result<Function, String> {
        let body = strip_shebang(source)?;
        // Redis's Lua never loads bytecode: its parser reads the signature byte as text.
        if body.first() == Some(&0x1b) {
            return Err(compile_error(
                b"user_script:1: unexpected symbol near 'char(27)'",
            ));
        }
        self.lua
            .load(body)
            .set_name(CHUNK_NAME)
            .set_mode(ChunkMode::Text)
            .into_function()
            .map_err(|err| match err {
                mlua::Error::SyntaxError { message, .. } => compile_error(message.as_bytes()),
                other => compile_error(other.to_string().as_bytes()),
            })
    }

    #[allow(clippy::too_many_arguments)]
    fn invoke(
        &self,
        func: &Function,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        call: &mut dyn FnMut(&[Vec<u8>], bool) -> Reply,
        host_panic: &HostPanic,
        as_callback: bool,
    ) -> mlua::Result<Reply> {
        let lua = &self.lua;
        // scriptPrepareForRun: every script and function starts on RESP2.
        self.resp3.set(false);
        let func = if as_callback {
            let (keys, argv) = (string_array(lua, keys)?, string_array(lua, argv)?);
            self.bind.call::<Function>((func.clone(), keys, argv))?
        } else {
            self.globals.raw_set("KEYS", string_array(lua, keys)?)?;
            self.globals.raw_set("ARGV", string_array(lua, argv)?)?;
            func.clone()
        };
        let func = &func;
        let host = RefCell::new(call);
        lua.scope(|scope| {
            // Bound afresh for every run because the host closure only lives for this call.
            let redis_call = scope.create_function(|lua, args: MultiValue| {
                redis_command(lua, args, true, &host, host_panic, &self.resp3)
            })?;
            let redis_pcall = scope.create_function(|lua, args: MultiValue| {
                redis_command(lua, args, false, &host, host_panic, &self.resp3)
            })?;
            self.redis.raw_set("call", redis_call)?;
            self.redis.raw_set("pcall", redis_pcall)?;
            // A simulated server must never hang: bound the work of one script. Once over
            // the budget every hook tick raises again, so a script that catches the error
            // with pcall still cannot loop forever. (Threads created by the script inherit
            // the hook in Lua 5.1.)
            let ticks = std::rc::Rc::new(std::cell::Cell::new(0u64));
            let t = ticks.clone();
            lua.set_hook(
                mlua::HookTriggers::new().every_nth_instruction(SCRIPT_HOOK_EVERY),
                move |lua, _| {
                    t.set(t.get() + 1);
                    if t.get() * u64::from(SCRIPT_HOOK_EVERY) > SCRIPT_INSTRUCTION_BUDGET {
                        // From now on raise at every instruction, so that the error also
                        // fires in frames outside any pcall and the script ends.
                        lua.set_hook(
                            mlua::HookTriggers::new().every_nth_instruction(1),
                            |_, _| Err(mlua::Error::RuntimeError(over_budget())),
                        )?;
                        return Err(mlua::Error::RuntimeError(over_budget()));
                    }
                    Ok(mlua::VmState::Continue)
                },
            )?;
            let results = self
                .xpcall
                .call::<MultiValue>((func.clone(), self.handler.clone()));
            lua.remove_hook();
            let results = results?;
            let mut results = results.into_iter();
            let ok = matches!(results.next(), Some(Value::Boolean(true)));
            let value = results.next().unwrap_or(Value::Nil);
            if !ok {
                return Ok(script_error(lua, value, sha));
            }
            if !matches!(value, Value::Table(_)) {
                return Ok(scalar_to_reply(value, self.resp3.get()));
            }
            let (out, len): (Table, usize) = self.flatten.call(value)?;
            flat_to_reply(&out, len, self.resp3.get())
        })
    }

    /// `for_functions`: with the load-time environment of FUNCTION LOAD (a state of its
    /// own, as Redis keeps one for EVAL and one for functions).
    fn build(for_functions: bool) -> mlua::Result<LuaEngine> {
        // With Rust panics passing through Lua's pcall/xpcall (and the error handler),
        // an mlua limit hit inside a script unwinds straight to the net in `run`.
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH,
            LuaOptions::new().catch_rust_panics(false),
        )?;
        // The state's own globals table becomes the read-only `_G` proxy: C functions
        // created so far have it as their environment, so getfenv() never reveals a
        // writable table.
        let g = lua.globals();
        let globals = lua.create_table()?;
        for name in KEPT_BUILTINS {
            globals.raw_set(name, g.raw_get::<Value>(name)?)?;
        }
        let raw_pcall: Function = g.raw_get("pcall")?;
        let raw_xpcall: Function = g.raw_get("xpcall")?;
        let raw_next: Function = g.raw_get("next")?;
        let raw_rawget: Function = g.raw_get("rawget")?;
        let tostring: Function = g.raw_get("tostring")?;
        let getmetatable: Function = g.raw_get("getmetatable")?;
        let coroutine: Table = g.raw_get("coroutine")?;
        let string: Table = g.raw_get("string")?;
        let math: Table = g.raw_get("math")?;
        let table: Table = g.raw_get("table")?;
        g.clear()?;

        let frozen = Rc::new(Frozen::default());
        let readonly = lua.create_function(|lua, _: MultiValue| -> mlua::Result<()> {
            Err(raise_msg(
                [
                    lua_where(lua, 1),
                    b"Attempt to modify a readonly table".to_vec(),
                ]
                .concat(),
            ))
        })?;
        let guard = lua.create_table()?;
        let freeze = |proxy: Table, real: Table| -> mlua::Result<Table> {
            let mt = lua.create_table()?;
            mt.raw_set("__index", real.clone())?;
            mt.raw_set("__newindex", readonly.clone())?;
            mt.raw_set("__metatable", guard.clone())?;
            proxy.set_metatable(Some(mt))?;
            frozen.pairs.borrow_mut().push((proxy.clone(), real));
            Ok(proxy)
        };
        freeze(guard.clone(), lua.create_table()?)?;

        let unwrap = lua.create_function(|lua, err: Value| unwrap_error(lua, err))?;
        let string_proxy = freeze(lua.create_table()?, string)?;
        let (pcall, xpcall, resume, flatten, bind): (
            Function,
            Function,
            Function,
            Function,
            Function,
        ) = lua.load(GLUE).set_name(GLUE_CHUNK_NAME).call((
            raw_pcall,
            raw_xpcall.clone(),
            coroutine.raw_get::<Function>("resume")?,
            unwrap,
            globals.raw_get::<Value>("select")?,
            globals.raw_get::<Value>("type")?,
            globals.raw_get::<Value>("error")?,
            getmetatable,
            string_proxy.clone(),
            raw_rawget,
            raw_next.clone(),
        ))?;
        globals.raw_set("pcall", pcall)?;
        globals.raw_set("xpcall", xpcall)?;
        coroutine.raw_set("resume", resume)?;
        globals.raw_set("string", string_proxy)?;
        globals.raw_set("coroutine", freeze(lua.create_table()?, coroutine)?)?;
        globals.raw_set("table", freeze(lua.create_table()?, table)?)?;

        let rng = Rc::new(Cell::new(LRAND48_INITIAL));
        install_random(&lua, &math, &rng)?;
        globals.raw_set("math", freeze(lua.create_table()?, math)?)?;

        install_raw_access(&lua, &globals, &frozen, raw_next.clone())?;

        let redis = lua.create_table()?;
        let resp3 = Rc::new(Cell::new(false));
        install_redis_lib(&lua, &redis, &resp3)?;
        globals.raw_set("redis", freeze(lua.create_table()?, redis.clone())?)?;
        libs::install(&lua, &globals, &freeze, raw_next)?;
        struct_lib::install(&lua, &globals, &freeze)?;

        let missing = lua.create_function(missing_global)?;
        let library = if for_functions {
            Some(functions::LibraryApi::install(
                &lua, &redis, &freeze, &missing,
            )?)
        } else {
            None
        };
        let globals_mt = lua.create_table()?;
        globals_mt.raw_set("__index", missing)?;
        globals.set_metatable(Some(globals_mt))?;
        globals.raw_set("_G", g.clone())?;
        freeze(g, globals.clone())?;

        let handler =
            lua.create_function(move |lua, err: Value| error_handler(lua, err, &tostring))?;
        lua.set_memory_limit(SCRIPT_MEMORY_LIMIT_BYTES)?;
        Ok(LuaEngine {
            lua,
            scripts: RefCell::new(BTreeMap::new()),
            globals,
            redis,
            xpcall: raw_xpcall,
            handler,
            flatten,
            bind,
            library,
            rng,
            resp3,
        })
    }
}

/// Redis loads a library's code under this chunk name: `user_function:2: ...` messages.
const FUNCTION_CHUNK_NAME: &str = "@user_function";
/// The hook interval of the load-time budget (Redis checks its 500 ms timeout every
/// 100,000 instructions).
const LOAD_HOOK_EVERY: u32 = 100_000;

/// The functions engine (Redis 7.0's `function_lua.c`): see lua/functions.rs.
impl LuaEngine {
    /// A functions engine: the sandbox, plus the library API for FUNCTION LOAD.
    pub fn for_functions() -> LuaEngine {
        // Only an allocation failure while building a fresh state can get here.
        Self::build(true).expect("cannot create the Lua functions state")
    }

    /// `luaEngineCreate`: compiles a library's code (what follows its `#!lua` line, from
    /// that line's line feed) and runs it in the library API, giving the functions it
    /// registered, or the error FUNCTION LOAD answers (full text).
    pub fn load_library(&self, code: &[u8]) -> Result<Vec<functions::Registered>, String> {
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
        let registered = api.close();
        outcome.map_err(|msg| format!("ERR Error registering functions: {msg}"))?;
        Ok(registered)
    }

    /// Runs `body` with the globals' `__index` on the library API and the load context
    /// open, and puts both back whatever happens.
    fn with_library_api<T>(&self, api: &functions::LibraryApi, body: impl FnOnce() -> T) -> T {
        let globals_mt = self.lua.globals().metatable();
        if let Some(mt) = &globals_mt {
            let _ = mt.raw_set("__index", api.globals.clone());
        }
        api.open();
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
        result.map_err(|err| functions::load_error_text(&err))
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

/// Redis 7.0's `__redis__err__handler`: turns whatever was raised into the
/// `{err=..., source=..., line=...}` table that EVAL turns into its error reply.
fn error_handler(lua: &Lua, err: Value, tostring: &Function) -> mlua::Result<Value> {
    let table = match err {
        Value::Table(t) => t,
        Value::Error(e) => match find_raise(&e) {
            Some(Raise::Table { msg, ignore_stats }) => error_table(lua, msg, *ignore_stats)?,
            Some(Raise::Msg(msg)) => error_table(lua, &[b"ERR ", msg.as_slice()].concat(), false)?,
            None => error_table(lua, format!("ERR {e}").as_bytes(), false)?,
        },
        other => {
            let text: LuaString = tostring.call(other)?;
            error_table(lua, &[b"ERR ", &text.as_bytes()[..]].concat(), false)?
        }
    };
    // The raiser of the error is at RAISER_LEVEL; when that is a C function the script
    // line is its caller's. The Lua glue stands in for C functions of Redis, so its frames
    // are passed over too.
    let mut level = RAISER_LEVEL;
    let mut site = frame_info(lua, level);
    if site.as_ref().is_some_and(|(what, _, _)| what == "C") {
        level += 1;
        site = frame_info(lua, level);
    }
    while site
        .as_ref()
        .is_some_and(|(_, source, _)| source == GLUE_CHUNK_NAME)
    {
        level += 1;
        site = frame_info(lua, level);
    }
    if let Some((_, source, line)) = site {
        // Redis's handler assigns with metamethods; a failing one must not lose the error.
        let _ = table.set("source", source);
        let _ = table.set("line", line);
    }
    Ok(Value::Table(table))
}

/// `what`, `source` and `currentline` of the function running at `level`.
fn frame_info(lua: &Lua, level: usize) -> Option<(String, String, i64)> {
    lua.inspect_stack(level, |d| {
        let source = d.source();
        let line = d.current_line().map_or(-1, |n| n as i64);
        (
            source.what.to_string(),
            source.source.map(|s| s.into_owned()).unwrap_or_default(),
            line,
        )
    })
}

/// `luaL_checktype(L, narg, LUA_TTABLE)`.
fn check_table(lua: &Lua, args: &MultiValue, narg: usize) -> mlua::Result<Table> {
    match args.get(narg - 1) {
        Some(Value::Table(t)) => Ok(t.clone()),
        other => Err(arg_error(
            lua,
            narg,
            &format!("table expected, got {}", type_name(other)),
        )),
    }
}

/// `luaL_checkany`.
fn check_any(lua: &Lua, args: &MultiValue, narg: usize) -> mlua::Result<Value> {
    match args.get(narg - 1) {
        Some(v) => Ok(v.clone()),
        None => Err(arg_error(lua, narg, "value expected")),
    }
}

/// `luaL_checkint`: a number or numeric string, truncated like C's casts on x86-64.
fn check_int(lua: &Lua, args: &MultiValue, narg: usize) -> mlua::Result<i32> {
    let value = args.get(narg - 1);
    match value.and_then(|v| lua.coerce_number(v.clone()).ok().flatten()) {
        Some(n) => Ok(number_to_i64(n) as i32),
        None => Err(arg_error(
            lua,
            narg,
            &format!("number expected, got {}", type_name(value)),
        )),
    }
}

/// Redis 7.0's `luaProtectedTableError`, the `__index` of the globals.
fn missing_global(lua: &Lua, args: MultiValue) -> mlua::Result<Value> {
    if args.len() != 2 {
        return Err(lua_error(
            lua,
            "Wrong number of arguments to luaProtectedTableError",
        ));
    }
    let name = args
        .get(1)
        .and_then(|v| lua.coerce_string(v.clone()).ok().flatten());
    let Some(name) = name else {
        return Err(lua_error(
            lua,
            "Second argument to luaProtectedTableError must be a string or number",
        ));
    };
    let name = String::from_utf8_lossy(c_str(&name.as_bytes())).into_owned();
    Err(lua_error(
        lua,
        &format!("Script attempted to access nonexistent global variable '{name}'"),
    ))
}

/// rawget, rawset, setmetatable, next and pairs see through the read-only proxies the way
/// Redis's patched Lua sees its read-only tables.
fn install_raw_access(
    lua: &Lua,
    globals: &Table,
    frozen: &Rc<Frozen>,
    raw_next: Function,
) -> mlua::Result<()> {
    let f = frozen.clone();
    let rawget = lua.create_function(move |lua, args: MultiValue| {
        let t = check_table(lua, &args, 1)?;
        let key = check_any(lua, &args, 2)?;
        let t = f.real_of(&t).unwrap_or(t);
        t.raw_get::<Value>(key)
    })?;
    globals.raw_set("rawget", rawget)?;

    let f = frozen.clone();
    let rawset = lua.create_function(move |lua, args: MultiValue| {
        let t = check_table(lua, &args, 1)?;
        let key = check_any(lua, &args, 2)?;
        let value = check_any(lua, &args, 3)?;
        if f.contains(&t) {
            return Err(raise_msg("Attempt to modify a readonly table"));
        }
        match key {
            Value::Nil => return Err(raise_msg("table index is nil")),
            Value::Number(n) if n.is_nan() => return Err(raise_msg("table index is NaN")),
            _ => {}
        }
        t.raw_set(key, value)?;
        Ok(t)
    })?;
    globals.raw_set("rawset", rawset)?;

    let f = frozen.clone();
    let setmetatable = lua.create_function(move |lua, args: MultiValue| {
        let t = check_table(lua, &args, 1)?;
        let mt = match args.get(1) {
            Some(Value::Nil) => None,
            Some(Value::Table(mt)) => Some(mt.clone()),
            _ => return Err(arg_error(lua, 2, "nil or table expected")),
        };
        if f.contains(&t) {
            return Err(raise_msg("Attempt to modify a readonly table"));
        }
        if let Some(current) = t.metatable()
            && !current.raw_get::<Value>("__metatable")?.is_nil()
        {
            return Err(lua_error(lua, "cannot change a protected metatable"));
        }
        t.set_metatable(mt)?;
        Ok(t)
    })?;
    globals.raw_set("setmetatable", setmetatable)?;

    let f = frozen.clone();
    let stock_next = raw_next.clone();
    let next = lua.create_function(move |lua, args: MultiValue| {
        let t = check_table(lua, &args, 1)?;
        let key = args.get(1).cloned().unwrap_or(Value::Nil);
        let t = f.real_of(&t).unwrap_or(t);
        stock_next
            .call::<MultiValue>((t, key))
            .map_err(|err| match err {
                mlua::Error::RuntimeError(msg) => {
                    let msg = msg.split("\nstack traceback:").next().unwrap_or_default();
                    raise_msg(msg)
                }
                other => other,
            })
    })?;
    globals.raw_set("next", next.clone())?;

    let f = frozen.clone();
    let pairs = lua.create_function(move |lua, args: MultiValue| {
        let t = check_table(lua, &args, 1)?;
        // The stock `next` stays the iterator for ordinary tables: it is much faster.
        let iter = if f.contains(&t) { &next } else { &raw_next };
        Ok((iter.clone(), t, Value::Nil))
    })?;
    globals.raw_set("pairs", pairs)?;
    Ok(())
}

/// Redis's math.random / math.randomseed over its own lrand48, so that sequences do not
/// depend on the C library (nor on other Lua states in the same process).
fn install_random(lua: &Lua, math: &Table, rng: &Rc<Cell<u64>>) -> mlua::Result<()> {
    let state = rng.clone();
    let random = lua.create_function(move |lua, args: MultiValue| {
        // Redis draws before checking the arguments, so a failing call still advances it.
        let r = (lrand48(&state) % LRAND48_MAX) as f64 / LRAND48_MAX as f64;
        match args.len() {
            0 => Ok(r),
            1 => {
                let u = check_int(lua, &args, 1)?;
                if u < 1 {
                    return Err(arg_error(lua, 1, "interval is empty"));
                }
                Ok((r * f64::from(u)).floor() + 1.0)
            }
            2 => {
                let l = check_int(lua, &args, 1)?;
                let u = check_int(lua, &args, 2)?;
                if l > u {
                    return Err(arg_error(lua, 2, "interval is empty"));
                }
                let span = u.wrapping_sub(l).wrapping_add(1);
                Ok((r * f64::from(span)).floor() + f64::from(l))
            }
            _ => Err(lua_error(lua, "wrong number of arguments")),
        }
    })?;
    math.raw_set("random", random)?;

    let state = rng.clone();
    let randomseed = lua.create_function(move |lua, args: MultiValue| {
        let seed = check_int(lua, &args, 1)?;
        state.set((u64::from(seed as u32) << 16) | 0x330e);
        Ok(())
    })?;
    math.raw_set("randomseed", randomseed)?;
    Ok(())
}

/// One step of rand.c's 48-bit linear congruential generator (`redisLrand48`).
fn lrand48(state: &Cell<u64>) -> i64 {
    let next = state.get().wrapping_mul(0x5_deec_e66d).wrapping_add(0xb) & 0xffff_ffff_ffff;
    state.set(next);
    (next >> 17) as i64
}

/// The `redis` table, except `call` and `pcall`, which are bound per run.
fn install_redis_lib(lua: &Lua, redis: &Table, resp3: &Rc<Cell<bool>>) -> mlua::Result<()> {
    redis.raw_set(
        "log",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() < 2 {
                return Err(raise_table(
                    "ERR redis.log() requires two arguments or more.",
                ));
            }
            let Some(level) = args
                .front()
                .and_then(|v| lua.coerce_number(v.clone()).ok().flatten())
            else {
                return Err(raise_table(
                    "ERR First argument must be a number (log level).",
                ));
            };
            if !(0..=3).contains(&number_to_i32(level)) {
                return Err(raise_table("ERR Invalid debug level."));
            }
            Ok(())
        })?,
    )?;
    for (name, level) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
    ] {
        redis.raw_set(name, level)?;
    }
    redis.raw_set("REDIS_VERSION_NUM", REDIS_VERSION_NUM)?;
    redis.raw_set("REDIS_VERSION", REDIS_VERSION)?;

    let resp = resp3.clone();
    redis.raw_set(
        "setresp",
        lua.create_function(move |lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(raise_table("ERR redis.setresp() requires one argument."));
            }
            let version = args
                .front()
                .and_then(|v| lua.coerce_number(v.clone()).ok().flatten())
                .map_or(0, number_to_i32);
            match version {
                2 | 3 => {
                    resp.set(version == 3);
                    Ok(())
                }
                _ => Err(raise_table("ERR RESP version must be 2 or 3.")),
            }
        })?,
    )?;

    redis.raw_set(
        "sha1hex",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(raise_table("ERR wrong number of arguments"));
            }
            // Redis hashes whatever lua_tolstring gives; for other types it reads an
            // uninitialised length, so hashing the empty string is as good as anything.
            let text = args
                .front()
                .and_then(|v| lua.coerce_string(v.clone()).ok().flatten());
            let bytes = text.map(|s| s.as_bytes().to_vec()).unwrap_or_default();
            Ok(hex(&Sha1::digest(&bytes)))
        })?,
    )?;

    redis.raw_set(
        "error_reply",
        lua.create_function(|lua, args: MultiValue| {
            let text = match (args.len(), args.back()) {
                (1, Some(Value::String(s))) => c_str(&s.as_bytes()).to_vec(),
                _ => return error_table(lua, b"ERR wrong number or type of arguments", false),
            };
            let buffer = if text.first() == Some(&b'-') {
                text
            } else {
                [b"-".as_slice(), &text].concat()
            };
            error_table(lua, &push_error_buff(&buffer), false)
        })?,
    )?;
    redis.raw_set(
        "status_reply",
        lua.create_function(|lua, args: MultiValue| {
            let value = match (args.len(), args.back()) {
                (1, Some(Value::String(s))) => s.clone(),
                _ => return error_table(lua, b"ERR wrong number or type of arguments", false),
            };
            let t = lua.create_table()?;
            t.raw_set("ok", value)?;
            Ok(t)
        })?,
    )?;

    redis.raw_set(
        "set_repl",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(raise_table("ERR redis.set_repl() requires two arguments."));
            }
            let flags = args
                .back()
                .and_then(|v| lua.coerce_number(v.clone()).ok().flatten())
                .map_or(0, number_to_i32);
            if flags & !3 != 0 {
                return Err(raise_table(
                    "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                ));
            }
            // Propagation is the host's business; scripts only get the argument checks.
            Ok(())
        })?,
    )?;
    for (name, flags) in [
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.raw_set(name, flags)?;
    }

    // The debugger is never active, which is all these three report.
    redis.raw_set("breakpoint", lua.create_function(|_, ()| Ok(false))?)?;
    redis.raw_set("debug", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
    redis.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    Ok(())
}

/// redis.call (`raise`) and redis.pcall: Redis's `luaRedisGenericCommand`.
fn redis_command(
    lua: &Lua,
    args: MultiValue,
    raise: bool,
    host: &Host<'_>,
    host_panic: &HostPanic,
    resp3: &Cell<bool>,
) -> mlua::Result<Value> {
    let fail = |msg: &[u8], ignore_stats: bool| -> mlua::Result<Value> {
        if raise {
            Err(mlua::Error::external(Raise::Table {
                msg: msg.to_vec(),
                ignore_stats,
            }))
        } else {
            Ok(Value::Table(error_table(lua, msg, ignore_stats)?))
        }
    };
    if args.is_empty() {
        return fail(
            b"ERR Please specify at least one argument for this redis lib call",
            false,
        );
    }
    let mut argv = Vec::with_capacity(args.len());
    for arg in args.iter() {
        match arg {
            Value::String(s) => argv.push(s.as_bytes().to_vec()),
            // Redis formats numbers with %.17g, not with Lua's lossy %.14g.
            Value::Integer(i) => argv.push(fmt_g17(*i as f64).into_bytes()),
            Value::Number(n) => argv.push(fmt_g17(*n).into_bytes()),
            _ => {
                return fail(
                    b"ERR Lua redis lib command arguments must be strings or integers",
                    false,
                );
            }
        }
    }
    if host_panic.borrow().is_some() {
        return Err(raise_msg("the host panicked in an earlier command"));
    }
    let reply = match host.try_borrow_mut() {
        Ok(mut run_command) => {
            match panic::catch_unwind(AssertUnwindSafe(|| (*run_command)(&argv, raise))) {
                Ok(reply) => reply,
                Err(payload) => {
                    // Kept for `run` to resume once Lua is unwound; Lua only sees an error.
                    *host_panic.borrow_mut() = Some(payload);
                    return Err(raise_msg("the host panicked"));
                }
            }
        }
        Err(_) => {
            // Redis answers a re-entrant call with this table, even for redis.call.
            return Ok(Value::Table(error_table(
                lua,
                b"ERR luaRedisGenericCommand() recursive call detected. \
                  Are you doing funny stuff with Lua debug hooks?",
                false,
            )?));
        }
    };
    match reply {
        Reply::Error(e) => fail(&push_error_buff(&[b"-", e.as_bytes()].concat()), true),
        other if resp3.get() => resp3::reply_to_lua(lua, &argv[0], &other, reply_to_lua),
        other => reply_to_lua(lua, &other),
    }
}

/// A reply as the Lua value Redis hands to the script (`redisProtocolToLuaType`).
fn reply_to_lua(lua: &Lua, reply: &Reply) -> mlua::Result<Value> {
    Ok(match reply {
        Reply::Ok => Value::Table(status_table(lua, b"OK")?),
        Reply::Status(s) => Value::Table(status_table(lua, s.as_bytes())?),
        Reply::Error(e) => Value::Table(error_table(
            lua,
            &push_error_buff(&[b"-", e.as_bytes()].concat()),
            true,
        )?),
        Reply::Int(i) => Value::Number(*i as f64),
        Reply::Bulk(b) => Value::String(lua.create_string(b)?),
        Reply::Nil => Value::Boolean(false),
        Reply::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, reply_to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
    })
}

fn status_table(lua: &Lua, status: &[u8]) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("ok", lua.create_string(status)?)?;
    Ok(t)
}

/// The `{err = msg}` table of luaPushError, flagged the way Redis flags command errors.
fn error_table(lua: &Lua, msg: &[u8], ignore_stats: bool) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(msg)?)?;
    if ignore_stats {
        t.raw_set("ignore_error_stats_update", true)?;
    }
    Ok(t)
}

/// Turns the error userdata of a Rust library function back into what Redis would have
/// raised, for Lua code that catches it.
fn unwrap_error(lua: &Lua, err: Value) -> mlua::Result<Value> {
    let Value::Error(e) = err else {
        return Ok(err);
    };
    Ok(match find_raise(&e) {
        Some(Raise::Table { msg, ignore_stats }) => {
            Value::Table(error_table(lua, msg, *ignore_stats)?)
        }
        Some(Raise::Msg(msg)) => Value::String(lua.create_string(msg)?),
        None => Value::String(lua.create_string(e.to_string())?),
    })
}

/// `luaPushErrorBuff`: "-CODE msg" keeps its code, anything else gets "ERR".
fn push_error_buff(buffer: &[u8]) -> Vec<u8> {
    let buffer = c_str(buffer);
    let (code, msg): (&[u8], &[u8]) = match buffer.split_first() {
        Some((b'-', rest)) => match rest.iter().position(|&b| b == b' ') {
            Some(space) => (&rest[..space], &rest[space + 1..]),
            None => (b"ERR", rest),
        },
        _ => (b"ERR", buffer),
    };
    [code, b" ", trim_crlf(msg)].concat()
}

/// The error reply of a script whose protected call failed (`luaCallFunction`).
fn script_error(lua: &Lua, err: Value, sha: &str) -> Reply {
    let Value::Table(t) = err else {
        let msg = lua.coerce_string(err).ok().flatten();
        let msg = msg.map(|s| c_str(&s.as_bytes()).to_vec());
        let msg = msg.unwrap_or_else(|| b"execution failure".to_vec());
        return Reply::Error(running_error(sha, &msg));
    };
    let field = |name: &str| -> Option<Vec<u8>> {
        let value = t.get::<Value>(name).ok()?;
        let text = lua.coerce_string(value).ok()??;
        Some(c_str(&text.as_bytes()).to_vec())
    };
    // Redis formats a NULL message here and crashes; say something instead.
    let mut out = field("err").unwrap_or_else(|| b"ERR unknown error".to_vec());
    if let (Some(source), Some(line)) = (field("source"), field("line")) {
        out.extend_from_slice(format!(" script: {sha}, on ").as_bytes());
        out.extend_from_slice(&source);
        out.push(b':');
        out.extend_from_slice(&line);
        out.push(b'.');
    }
    Reply::Error(String::from_utf8_lossy(&out).into_owned())
}

/// "Error running script" for an error that is not a table (the handler itself failed).
fn running_error(sha: &str, msg: &[u8]) -> String {
    let msg = &msg[..msg.len().min(100)];
    let text = [
        format!("Error running script {sha}, ").as_bytes(),
        msg,
        b"\n",
    ]
    .concat();
    format_error(&text)
}

/// `addReplyErrorFormat`: trims and flattens line breaks, adds "ERR " when no code is given.
fn format_error(text: &[u8]) -> String {
    let text = map_crlf(trim_crlf(text));
    match text.strip_prefix(b"-") {
        Some(rest) => String::from_utf8_lossy(rest).into_owned(),
        None => format!("ERR {}", String::from_utf8_lossy(&text)),
    }
}

fn compile_error(lua_message: &[u8]) -> String {
    compile_error_text("Error compiling script (new function): ", lua_message)
}

/// A compile error's reply: `prefix` (EVAL's or FUNCTION LOAD's words) and Lua's message.
fn compile_error_text(prefix: &str, lua_message: &[u8]) -> String {
    format_error(&[prefix.as_bytes(), c_str(lua_message)].concat())
}

/// Rebuilds the reply from the flat `(tag, value)` list the Lua side of
/// `luaReplyToRedisReply` wrote (see `flatten` in [`GLUE`]).
/// `resp3`: the script ended on RESP3 (`redis.setresp(3)`), where a Lua `false` is a RESP3
/// boolean, which a RESP2 client reads as 0 (on RESP2 it is a null).
fn flat_to_reply(out: &Table, len: usize, resp3: bool) -> mlua::Result<Reply> {
    let mut open: Vec<Vec<Reply>> = Vec::new();
    let mut finished = Reply::Nil;
    let mut i = 1;
    while i <= len {
        let tag = match out.raw_get::<Value>(i)? {
            Value::String(s) => s.as_bytes().first().copied().unwrap_or(b'f'),
            _ => b'f',
        };
        i += 1;
        let reply = match tag {
            b'[' => {
                open.push(Vec::new());
                continue;
            }
            b']' => Reply::Array(open.pop().unwrap_or_default()),
            b'L' => Reply::err("ERR reached lua stack limit"),
            b't' => Reply::Int(1),
            b'F' if resp3 => Reply::Int(0),
            b'b' | b'n' | b'E' | b'S' | b'D' | b'B' => {
                let value = out.raw_get::<Value>(i)?;
                i += 1;
                tagged_reply(tag, value)
            }
            _ => Reply::Nil,
        };
        match open.last_mut() {
            Some(parent) => parent.push(reply),
            None => finished = reply,
        }
    }
    Ok(finished)
}

fn scalar_to_reply(value: Value, resp3: bool) -> Reply {
    match value {
        Value::String(s) => Reply::Bulk(s.as_bytes().to_vec()),
        Value::Boolean(true) => Reply::Int(1),
        Value::Boolean(false) if resp3 => Reply::Int(0),
        Value::Integer(i) => Reply::Int(i),
        Value::Number(n) => Reply::Int(number_to_i64(n)),
        _ => Reply::Nil,
    }
}

fn tagged_reply(tag: u8, value: Value) -> Reply {
    let bytes = |v: &Value| match v {
        Value::String(s) => s.as_bytes().to_vec(),
        _ => Vec::new(),
    };
    let number = |v: &Value| match v {
        Value::Integer(i) => *i as f64,
        Value::Number(n) => *n,
        _ => 0.0,
    };
    match tag {
        b'b' => Reply::Bulk(bytes(&value)),
        b'n' => match value {
            Value::Integer(i) => Reply::Int(i),
            other => Reply::Int(number_to_i64(number(&other))),
        },
        // addReplyErrorFormat("-%s"): trailing line breaks trimmed, inner ones flattened.
        b'E' => {
            let raw = bytes(&value);
            let text = map_crlf(trim_end_crlf(c_str(&raw)));
            Reply::Error(String::from_utf8_lossy(&text).into_owned())
        }
        b'S' => {
            let raw = bytes(&value);
            let text = map_crlf(c_str(&raw));
            if text == b"OK" {
                Reply::Ok
            } else {
                Reply::Status(String::from_utf8_lossy(&text).into_owned())
            }
        }
        b'D' => Reply::Bulk(fmt_double(number(&value)).into_bytes()),
        b'B' => Reply::Bulk(map_crlf(&bytes(&value))),
        _ => Reply::Nil,
    }
}

/// `addReplyDouble` for a RESP2 client.
fn fmt_double(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    fmt_g17(d)
}

/// C's `printf("%.17g", x)` as glibc prints it.
fn fmt_g17(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let scientific = format!("{x:.16e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..17).contains(&exponent) {
        let fixed = format!("{:.*}", (16 - exponent) as usize, x);
        strip_fraction_zeros(&fixed).to_string()
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            strip_fraction_zeros(mantissa),
            exponent.unsigned_abs()
        )
    }
}

fn strip_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

fn string_array(lua: &Lua, items: &[Vec<u8>]) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(t)
}

fn is_crlf(b: &u8) -> bool {
    *b == b'\r' || *b == b'\n'
}

/// `sdstrim(s, "\r\n")`.
fn trim_crlf(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !is_crlf(b))
        .unwrap_or(bytes.len());
    trim_end_crlf(&bytes[start..])
}

fn trim_end_crlf(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|b| !is_crlf(b)).map_or(0, |i| i + 1);
    &bytes[..end]
}

/// `sdsmapchars(s, "\r\n", "  ", 2)`.
fn map_crlf(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|&b| if is_crlf(&b) { b' ' } else { b })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
