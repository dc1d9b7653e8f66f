//! A node's function libraries (Redis 7.0 `functions.c`): FUNCTION LOAD, LIST, DELETE and
//! FLUSH over the libraries, and the lookup FCALL makes, with Redis 7.0.15's checks in its
//! order and its error texts (tests/conformance/recorded/functions.txt).
//!
//! What a library is, is its code: the libraries are kept as the code they were loaded from
//! with what it registered, and the compiled callbacks live in a Lua state of their own
//! beside them ([`Compiled`]), which a copy of the store does not share: the copy compiles
//! its libraries again when it first needs them, as a server loading them from an RDB
//! does. (Only state a library keeps in its own upvalues, a counter say, starts afresh
//! there.)

use std::collections::BTreeMap;
use std::sync::Arc;

use mlua::Function;

use crate::proto::{Bytes, Reply};
use crate::redis::keyspace::glob_match;
use crate::redis::lua::functions::{BAD_NAME, valid_name};
use crate::redis::lua::{LuaEngine, ScriptFlags};

/// The one engine Redis 7.0 registers (engine names compare without case).
const ENGINE_NAME: &str = "LUA";

/// What FUNCTION LIST and FCALL know of a registered function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionInfo {
    /// As registered (FCALL finds it in any case; its errors name it so).
    pub name: Vec<u8>,
    pub description: Option<Vec<u8>>,
    pub flags: ScriptFlags,
}

#[derive(Clone, Debug)]
struct Library {
    /// The whole FUNCTION LOAD payload, `#!lua` line included (LIST WITHCODE's).
    code: Arc<[u8]>,
    /// In the order the code registered them (Redis lists them in its dict's order).
    functions: Vec<FunctionInfo>,
}

/// The compiled callbacks: a Lua state and each function's callback in it.
#[derive(Default)]
struct Compiled {
    engine: Option<LuaEngine>,
    // Invariant: empty when `engine` is None; otherwise one callback per function of the
    // store's libraries, by lower-cased name, each a function of `engine`.
    callbacks: BTreeMap<Vec<u8>, Function>,
}

/// A copy compiles afresh (a Lua state cannot be copied).
impl Clone for Compiled {
    fn clone(&self) -> Compiled {
        Compiled::default()
    }
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("callbacks", &self.callbacks.len())
            .finish_non_exhaustive()
    }
}

/// The function libraries of a node.
#[derive(Clone, Debug, Default)]
pub struct FunctionStore {
    /// By name (compared exactly, as Redis's library dict does).
    libraries: BTreeMap<Vec<u8>, Library>,
    // Invariant: the lower-cased names of every function of `libraries`, each to its
    // library's name (Redis's function dict compares names without case).
    owners: BTreeMap<Vec<u8>, Vec<u8>>,
    compiled: Compiled,
}

/// A library's `#!` line as `functionExtractLibMetaData` reads it.
struct Metadata<'a> {
    engine: Vec<u8>,
    name: Vec<u8>,
    /// The code after the `#!` line, from its line feed on (so line numbers hold).
    code: &'a [u8],
}

fn err(msg: impl AsRef<str>) -> String {
    format!("ERR {}", msg.as_ref())
}

impl FunctionStore {
    pub fn is_empty(&self) -> bool {
        self.libraries.is_empty()
    }

    /// The function FCALL names, found without case.
    pub fn find(&self, name: &[u8]) -> Option<&FunctionInfo> {
        let lib = self.owners.get(&name.to_ascii_lowercase())?;
        self.libraries
            .get(lib)?
            .functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
    }

    /// The libraries' payloads, for a full sync (each one FUNCTION LOAD on the replica).
    pub fn payloads(&self) -> Vec<Arc<[u8]>> {
        self.libraries.values().map(|l| l.code.clone()).collect()
    }

    /// FUNCTION LOAD's arguments past LOAD (`functionLoadCommand`): `[REPLACE] code`.
    /// The library's name, or the error text.
    pub fn load(&mut self, args: &[Bytes]) -> Result<Vec<u8>, String> {
        let mut replace = false;
        let mut pos = 0;
        while pos + 1 < args.len() {
            let arg = &args[pos];
            pos += 1;
            if arg.eq_ignore_ascii_case(b"replace") {
                replace = true;
                continue;
            }
            return Err(err(format!(
                "Unknown option given: {}",
                String::from_utf8_lossy(c_str(arg))
            )));
        }
        let Some(code) = args.get(pos) else {
            return Err(err("Function code is missing"));
        };
        self.create(code, replace)
    }

    /// `functionsCreateWithLibraryCtx`.
    fn create(&mut self, payload: &[u8], replace: bool) -> Result<Vec<u8>, String> {
        let md = metadata(payload)?;
        if !valid_name(&md.name) {
            return Err(err(BAD_NAME));
        }
        if !md.engine.eq_ignore_ascii_case(ENGINE_NAME.as_bytes()) {
            return Err(err(format!(
                "Engine '{}' not found",
                String::from_utf8_lossy(&md.engine)
            )));
        }
        if self.libraries.contains_key(&md.name) && !replace {
            return Err(err(format!(
                "Library '{}' already exists",
                String::from_utf8_lossy(&md.name)
            )));
        }
        self.ensure_compiled();
        let engine = self.compiled.engine.as_ref().expect("compiled above");
        let registered = engine.load_library(md.code)?;
        if registered.is_empty() {
            return Err(err("No functions registered"));
        }
        for f in &registered {
            let taken = self.owners.get(&f.name.to_ascii_lowercase());
            if taken.is_some_and(|lib| *lib != md.name) {
                return Err(err(format!(
                    "Function {} already exists",
                    String::from_utf8_lossy(c_str(&f.name))
                )));
            }
        }
        self.unlink(&md.name);
        let mut functions = Vec::with_capacity(registered.len());
        for f in registered {
            let key = f.name.to_ascii_lowercase();
            // Two names of one library equal but for case: Redis's function dict keeps the
            // first it links; so does this.
            if self.owners.contains_key(&key) {
                continue;
            }
            self.owners.insert(key.clone(), md.name.clone());
            self.compiled.callbacks.insert(key, f.callback);
            functions.push(FunctionInfo {
                name: f.name,
                description: f.description,
                flags: f.flags,
            });
        }
        let library = Library {
            code: payload.into(),
            functions,
        };
        self.libraries.insert(md.name.clone(), library);
        Ok(md.name)
    }

    /// Removes a library and its functions (their callbacks are dropped with them).
    fn unlink(&mut self, name: &[u8]) -> bool {
        let Some(lib) = self.libraries.remove(name) else {
            return false;
        };
        for f in &lib.functions {
            let key = f.name.to_ascii_lowercase();
            self.owners.remove(&key);
            self.compiled.callbacks.remove(&key);
        }
        true
    }

    /// FUNCTION DELETE.
    pub fn delete(&mut self, name: &[u8]) -> Result<(), String> {
        if self.unlink(name) {
            Ok(())
        } else {
            Err(err("Library not found"))
        }
    }

    /// FUNCTION FLUSH: every library, and the Lua state with them (Redis makes a new one).
    pub fn flush(&mut self) {
        *self = FunctionStore::default();
    }

    /// Compiles every library into a fresh state if there is none (after a copy).
    fn ensure_compiled(&mut self) {
        if self.compiled.engine.is_some() {
            return;
        }
        let engine = LuaEngine::for_functions();
        for lib in self.libraries.values() {
            // The code loaded before: it registers the same functions again (a failure,
            // which could only be the memory cap, leaves those functions uncallable).
            let Ok(md) = metadata(&lib.code) else {
                continue;
            };
            for f in engine.load_library(md.code).unwrap_or_default() {
                let key = f.name.to_ascii_lowercase();
                if self.owners.contains_key(&key) {
                    self.compiled.callbacks.entry(key).or_insert(f.callback);
                }
            }
        }
        self.compiled.engine = Some(engine);
    }

    /// The engine and the callback of a function `find` found, compiled if need be. The
    /// caller runs it with the store borrowed no longer ([`FunctionStore::take_engine`]).
    pub fn take_engine(&mut self, name: &[u8]) -> Option<(LuaEngine, Function)> {
        self.ensure_compiled();
        let callback = self
            .compiled
            .callbacks
            .get(&name.to_ascii_lowercase())?
            .clone();
        let engine = self.compiled.engine.take()?;
        Some((engine, callback))
    }

    /// Gives back what [`FunctionStore::take_engine`] took.
    pub fn return_engine(&mut self, engine: LuaEngine) {
        self.compiled.engine = Some(engine);
    }

    /// FUNCTION LIST's arguments past LIST, and its reply (RESP2: maps as flat arrays, the
    /// flags' set as an array of statuses).
    pub fn list(&self, args: &[Bytes]) -> Reply {
        let mut with_code = false;
        let mut pattern: Option<&Bytes> = None;
        let mut i = 0;
        while i < args.len() {
            let arg = &args[i];
            if !with_code && arg.eq_ignore_ascii_case(b"withcode") {
                with_code = true;
            } else if pattern.is_none() && arg.eq_ignore_ascii_case(b"libraryname") {
                let Some(p) = args.get(i + 1) else {
                    return Reply::Error(err("library name argument was not given"));
                };
                pattern = Some(p);
                i += 1;
            } else {
                return Reply::Error(err(format!(
                    "Unknown argument {}",
                    String::from_utf8_lossy(c_str(arg))
                )));
            }
            i += 1;
        }
        // stringmatchlen with nocase: both sides lower-cased.
        let pattern = pattern.map(|p| p.to_ascii_lowercase());
        let bulk = |b: &[u8]| Reply::Bulk(b.to_vec());
        let libs = self.libraries.iter().filter(|(name, _)| {
            pattern
                .as_ref()
                .is_none_or(|p| glob_match(p, &name.to_ascii_lowercase()))
        });
        let list = libs.map(|(name, lib)| {
            let functions = lib.functions.iter().map(|f| {
                Reply::Array(vec![
                    bulk(b"name"),
                    bulk(&f.name),
                    bulk(b"description"),
                    f.description.as_deref().map_or(Reply::Nil, bulk),
                    bulk(b"flags"),
                    Reply::Array(
                        f.flags
                            .names()
                            .into_iter()
                            .map(|n| Reply::Status(n.to_string()))
                            .collect(),
                    ),
                ])
            });
            let mut fields = vec![
                bulk(b"library_name"),
                bulk(name),
                bulk(b"engine"),
                bulk(ENGINE_NAME.as_bytes()),
                bulk(b"functions"),
                Reply::Array(functions.collect()),
            ];
            if with_code {
                fields.extend([bulk(b"library_code"), bulk(&lib.code)]);
            }
            Reply::Array(fields)
        });
        Reply::Array(list.collect())
    }
}

/// The part of `bytes` a C string function sees.
fn c_str(bytes: &[u8]) -> &[u8] {
    bytes.split(|&b| b == 0).next().unwrap_or_default()
}

/// `functionExtractLibMetaData`: `#!<engine> name=<name>` and nothing else on the line.
fn metadata(payload: &[u8]) -> Result<Metadata<'_>, String> {
    if !payload.starts_with(b"#!") {
        return Err(err("Missing library metadata"));
    }
    // strchr: a NUL ends the search.
    let Some(end) = c_str(payload).iter().position(|&b| b == b'\n') else {
        return Err(err("Invalid library metadata"));
    };
    let Some(parts) = split_args(&payload[..end]).filter(|p| !p.is_empty()) else {
        return Err(err("Invalid library metadata"));
    };
    let engine = parts[0].get(2..).unwrap_or_default().to_vec();
    let mut name = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(err(
                    "Invalid metadata value, name argument was given multiple times",
                ));
            }
            name = Some(part[5..].to_vec());
            continue;
        }
        return Err(err(format!(
            "Invalid metadata value given: {}",
            String::from_utf8_lossy(c_str(part))
        )));
    }
    let Some(name) = name else {
        return Err(err("Library name was not given"));
    };
    Ok(Metadata {
        engine,
        name,
        code: &payload[end..],
    })
}

/// `sdssplitargs`: words split on white space, `"..."` with its escapes and `'...'`; `None`
/// for unbalanced quotes or a closing quote not followed by a space.
fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= line.len() {
            return Some(out);
        }
        out.push(read_word(line, &mut i)?);
    }
}

/// One word of `split_args` from `line[*i]` (not a space), `*i` left after it.
fn read_word(line: &[u8], i: &mut usize) -> Option<Vec<u8>> {
    let mut word = Vec::new();
    let (mut in_dq, mut in_sq) = (false, false);
    // A closing quote must end the word.
    let closes = |at: usize| line.get(at + 1).is_none_or(|n| n.is_ascii_whitespace());
    loop {
        let c = line.get(*i).copied();
        if in_dq {
            let c = c?;
            if c == b'\\' && line.get(*i + 1) == Some(&b'x') {
                let hex = line.get(*i + 2..*i + 4);
                if let Some(h) = hex.filter(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                    word.push(u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()?);
                    *i += 4;
                    continue;
                }
            }
            if c == b'\\' && *i + 1 < line.len() {
                word.push(match line[*i + 1] {
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'b' => 8,
                    b'a' => 7,
                    other => other,
                });
                *i += 2;
                continue;
            }
            if c == b'"' {
                *i += 1;
                return closes(*i - 1).then_some(word);
            }
            word.push(c);
        } else if in_sq {
            let c = c?;
            if c == b'\\' && line.get(*i + 1) == Some(&b'\'') {
                word.push(b'\'');
                *i += 2;
                continue;
            }
            if c == b'\'' {
                *i += 1;
                return closes(*i - 1).then_some(word);
            }
            word.push(c);
        } else {
            match c {
                None => return Some(word),
                Some(c) if c.is_ascii_whitespace() => return Some(word),
                Some(b'"') => in_dq = true,
                Some(b'\'') => in_sq = true,
                Some(c) => word.push(c),
            }
        }
        *i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(store: &mut FunctionStore, code: &str) -> Result<Vec<u8>, String> {
        store.load(&[Bytes::from(code)])
    }

    #[test]
    fn a_library_line_needs_an_engine_and_one_name() {
        let mut s = FunctionStore::default();
        assert_eq!(
            load(&mut s, "return 1"),
            Err(err("Missing library metadata"))
        );
        assert_eq!(
            load(&mut s, "#!lua name=a"),
            Err(err("Invalid library metadata"))
        );
        assert_eq!(
            load(&mut s, "#!lua name=\"a\nx"),
            Err(err("Invalid library metadata"))
        );
        assert_eq!(
            load(&mut s, "#!js name=a\nx"),
            Err(err("Engine 'js' not found"))
        );
        assert_eq!(
            load(
                &mut s,
                "#!lua \"name=q\"\nredis.register_function('f', function() end)"
            ),
            Ok(b"q".to_vec())
        );
    }

    #[test]
    fn functions_are_found_in_any_case_and_replace_keeps_other_libraries_names() {
        let mut s = FunctionStore::default();
        let a = "#!lua name=a\nredis.register_function('Fa', function() return 1 end)";
        assert_eq!(load(&mut s, a), Ok(b"a".to_vec()));
        assert_eq!(s.find(b"FA").map(|f| f.name.clone()), Some(b"Fa".to_vec()));
        let b = "#!lua name=b\nredis.register_function('fa', function() return 2 end)";
        assert_eq!(load(&mut s, b), Err(err("Function fa already exists")));
        let replace = [Bytes::from("REPLACE"), Bytes::from(a)];
        assert_eq!(s.load(&replace), Ok(b"a".to_vec()));
        assert_eq!(s.delete(b"A"), Err(err("Library not found")));
        assert_eq!(s.delete(b"a"), Ok(()));
        assert!(s.find(b"fa").is_none() && s.is_empty());
    }

    #[test]
    fn a_copy_compiles_its_libraries_again() {
        let mut s = FunctionStore::default();
        let a = "#!lua name=a\nredis.register_function('f', function() return 7 end)";
        load(&mut s, a).expect("loads");
        let mut copy = s.clone();
        let (engine, callback) = copy.take_engine(b"F").expect("compiled again");
        let reply = engine.run_callback(&callback, "f", &[], &[], &mut |_, _| Reply::Nil);
        assert_eq!(reply, Reply::Int(7));
        copy.return_engine(engine);
    }
}
