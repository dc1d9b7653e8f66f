//! The C libraries Redis 7.0 links into its Lua: `cjson` (lua-cjson 2.1.0 with Redis's
//! defaults), `cmsgpack` (lua-cmsgpack 0.4.0) and `bit` (LuaBitOp 1.0.2), written in Rust
//! against the same Lua 5.1 state, with the replies and error texts Redis 7.0.15 gives
//! (checked against a real server; tests/conformance/recorded/lua-libs.txt).
//!
//! Nesting is Redis's, and no Rust recursion follows it: cjson refuses past depth 1000 in
//! both directions with lua-cjson's texts, cmsgpack unpacks until the 8,000 Lua stack slots
//! of its C function run out (3,999 nested arrays unpack, 4,000 fail with "stack
//! overflow (in function mp_decode_to_lua_array)") and packs tables deeper than 16 as nil.
//! The encoder and both decoders keep their open tables in a heap stack, so what a debug
//! build's or a sweep thread's stack holds decides nothing
//! (tests/conformance/recorded/lua-nesting.txt, recorded from Redis 7.0.15).
//!
//! Left out: `cjson.encode_keep_buffer`, `cjson.encode_max_depth` and the other
//! configuration functions, `cjson.new`, and msgpack's ext types (unpacked as a format
//! error). Redis's `struct` library is in `struct_lib.rs`. A Rust function returns fewer values to
//! Lua than a C one may (mlua keeps stack slots of its own): an `unpack` of more than about
//! 7,900 top-level values, which Redis returns up to 7,999 of, fails here with a stack error.

use mlua::{Function, LightUserData, Lua, MultiValue, Table, Value};

use super::lauxlib::{arg_error, lua_error, raise_msg, type_name};

/// lua-cjson's defaults as Redis builds it.
const CJSON_MAX_DEPTH: usize = 1000;
const CJSON_SPARSE_RATIO: usize = 2;
const CJSON_SPARSE_SAFE: usize = 10;
const CJSON_NUMBER_PRECISION: usize = 14;
/// lua-cmsgpack encodes tables nested deeper than this as nil.
const MSGPACK_MAX_NESTING: usize = 16;
/// The Lua stack slots a C function may use (Lua 5.1 luaconf.h): what bounds lua-cmsgpack's
/// unpacking, which has no depth limit of its own.
const LUAI_MAXCSTACK: usize = 8000;

/// `cjson.null`: a light userdata holding NULL, as lua-cjson makes it.
fn json_null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

fn number_of(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// Installs `cjson`, `cmsgpack` and `bit` as read-only globals (`freeze` makes the
/// read-only proxy of a library table, as Redis 7.0 protects every library).
pub(crate) fn install(
    lua: &Lua,
    globals: &Table,
    freeze: &dyn Fn(Table, Table) -> mlua::Result<Table>,
    raw_next: Function,
) -> mlua::Result<()> {
    let cjson = lua.create_table()?;
    // lua-cjson walks an object with lua_next: the stock `next`, whatever the script does.
    let encode = move |lua: &Lua, args: MultiValue| cjson_encode(lua, &raw_next, args);
    cjson.raw_set("encode", lua.create_function(encode)?)?;
    cjson.raw_set("decode", lua.create_function(cjson_decode)?)?;
    cjson.raw_set("null", json_null())?;
    cjson.raw_set("_NAME", "cjson")?;
    cjson.raw_set("_VERSION", "2.1.0")?;
    globals.raw_set("cjson", freeze(lua.create_table()?, cjson)?)?;

    let msgpack = lua.create_table()?;
    msgpack.raw_set("pack", lua.create_function(msgpack_pack)?)?;
    msgpack.raw_set("unpack", lua.create_function(msgpack_unpack)?)?;
    msgpack.raw_set("unpack_one", lua.create_function(msgpack_unpack_one)?)?;
    msgpack.raw_set("unpack_limit", lua.create_function(msgpack_unpack_limit)?)?;
    msgpack.raw_set("_NAME", "cmsgpack")?;
    msgpack.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    globals.raw_set("cmsgpack", freeze(lua.create_table()?, msgpack)?)?;

    let bit = lua.create_table()?;
    install_bit(lua, &bit)?;
    globals.raw_set("bit", freeze(lua.create_table()?, bit)?)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// bit

/// LuaBitOp's `barg`: the low 32 bits of `n + 2^52 + 2^51` (round to nearest even, modulo
/// 2^32); a zero result from something that is not a number is a type error.
fn barg(lua: &Lua, args: &MultiValue, narg: usize) -> mlua::Result<u32> {
    let value = args.get(narg - 1);
    let n = value
        .and_then(|v| lua.coerce_number(v.clone()).ok().flatten())
        .unwrap_or(0.0);
    let b = (n + 6_755_399_441_055_744.0).to_bits() as u32;
    let is_number = value.is_some_and(|v| number_of(v).is_some())
        || value.is_some_and(|v| {
            matches!(v, Value::String(_)) && lua.coerce_number(v.clone()).ok().flatten().is_some()
        });
    if b == 0 && !is_number {
        return Err(arg_error(
            lua,
            narg,
            &format!("number expected, got {}", type_name(value)),
        ));
    }
    Ok(b)
}

fn bret(b: u32) -> f64 {
    f64::from(b as i32)
}

type Unary = fn(u32) -> u32;
type Binary = fn(u32, u32) -> u32;

fn install_bit(lua: &Lua, bit: &Table) -> mlua::Result<()> {
    let unary: [(&str, Unary); 3] = [
        ("tobit", |b| b),
        ("bnot", |b| !b),
        ("bswap", u32::swap_bytes),
    ];
    for (name, f) in unary {
        bit.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| Ok(bret(f(barg(lua, &args, 1)?))))?,
        )?;
    }
    let variadic: [(&str, Binary); 3] = [
        ("band", |a, b| a & b),
        ("bor", |a, b| a | b),
        ("bxor", |a, b| a ^ b),
    ];
    for (name, f) in variadic {
        bit.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                // LuaBitOp reads argument 1, then the others from the last one down.
                let mut b = barg(lua, &args, 1)?;
                for i in (2..=args.len()).rev() {
                    b = f(b, barg(lua, &args, i)?);
                }
                Ok(bret(b))
            })?,
        )?;
    }
    let shifts: [(&str, Binary); 5] = [
        ("lshift", |b, n| b << n),
        ("rshift", |b, n| b >> n),
        ("arshift", |b, n| ((b as i32) >> n) as u32),
        ("rol", u32::rotate_left),
        ("ror", u32::rotate_right),
    ];
    for (name, f) in shifts {
        bit.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                let b = barg(lua, &args, 1)?;
                let n = barg(lua, &args, 2)? & 31;
                Ok(bret(f(b, n)))
            })?,
        )?;
    }
    bit.raw_set(
        "tohex",
        lua.create_function(|lua, args: MultiValue| {
            let b = barg(lua, &args, 1)?;
            let mut n = if args.len() < 2 {
                8
            } else {
                barg(lua, &args, 2)? as i32
            };
            let digits: &[u8; 16] = if n < 0 {
                n = n.saturating_neg();
                b"0123456789ABCDEF"
            } else {
                b"0123456789abcdef"
            };
            let n = n.min(8) as usize;
            let mut out = vec![0u8; n];
            let mut v = b;
            for slot in out.iter_mut().rev() {
                *slot = digits[(v & 15) as usize];
                v >>= 4;
            }
            lua.create_string(&out)
        })?,
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// cjson encode

fn cjson_encode(lua: &Lua, next: &Function, args: MultiValue) -> mlua::Result<mlua::String> {
    if args.len() != 1 {
        return Err(arg_error(lua, 1, "expected 1 argument"));
    }
    let mut out = Vec::new();
    encode(lua, next, args[0].clone(), &mut out)?;
    lua.create_string(&out)
}

fn encode_error(lua: &Lua, value: &Value, reason: &str) -> mlua::Error {
    lua_error(
        lua,
        &format!("Cannot serialise {}: {reason}", type_name(Some(value))),
    )
}

/// A table being written by `encode`.
enum EncodeFrame {
    /// `[` written; elements `1..=done` written of `len`.
    Array {
        table: Table,
        len: usize,
        done: usize,
    },
    /// `{` written; `last` is the key written last (`Nil` before the first), so the next
    /// pair is `next(table, last)`, lua_next's walk.
    Object { table: Table, last: Value },
}

/// `json_append_data` without recursion: the tables open around the value being written
/// are a stack on the heap, so the depth is bounded by lua-cjson's `encode_max_depth`
/// (1000, "Cannot serialise, excessive nesting (1001)") and by nothing the host's stack
/// size decides (the recursive version overflowed a 2 MiB test thread at depth ~515 in a
/// debug build). Each open table holds two Lua handles, at most 2,000 of mlua's ~8,000.
fn encode(lua: &Lua, next: &Function, value: Value, out: &mut Vec<u8>) -> mlua::Result<()> {
    let mut open: Vec<EncodeFrame> = Vec::new();
    let mut pending = Some(value);
    loop {
        if let Some(value) = pending.take() {
            match value {
                Value::Table(t) => {
                    // lua_cjson.c json_append_data: `current_depth++` then the check.
                    let depth = open.len() + 1;
                    if depth > CJSON_MAX_DEPTH {
                        return Err(lua_error(
                            lua,
                            &format!("Cannot serialise, excessive nesting ({depth})"),
                        ));
                    }
                    match array_length(lua, &Value::Table(t.clone()), &t)? {
                        Some(len) if len > 0 => {
                            out.push(b'[');
                            open.push(EncodeFrame::Array {
                                table: t,
                                len,
                                done: 0,
                            });
                        }
                        _ => {
                            out.push(b'{');
                            open.push(EncodeFrame::Object {
                                table: t,
                                last: Value::Nil,
                            });
                        }
                    }
                }
                other => encode_scalar(lua, &other, out)?,
            }
        }
        // The innermost open table's next element, or its end.
        let Some(frame) = open.last_mut() else {
            return Ok(());
        };
        match frame {
            EncodeFrame::Array { table, len, done } => {
                if *done == *len {
                    out.push(b']');
                    open.pop();
                    continue;
                }
                if *done > 0 {
                    out.push(b',');
                }
                *done += 1;
                pending = Some(table.raw_get(*done)?);
            }
            EncodeFrame::Object { table, last } => {
                let first = matches!(last, Value::Nil);
                let (k, v): (Value, Value) = next.call((table.clone(), last.clone()))?;
                if matches!(k, Value::Nil) {
                    out.push(b'}');
                    open.pop();
                    continue;
                }
                if !first {
                    out.push(b',');
                }
                match &k {
                    Value::String(s) => encode_string(&s.as_bytes(), out),
                    Value::Integer(_) | Value::Number(_) => {
                        out.push(b'"');
                        encode_number(lua, &k, number_of(&k).unwrap_or(0.0), out)?;
                        out.push(b'"');
                    }
                    other => {
                        return Err(encode_error(
                            lua,
                            other,
                            "table key must be a number or string",
                        ));
                    }
                }
                out.push(b':');
                *last = k;
                pending = Some(v);
            }
        }
    }
}

/// Every value but a table.
fn encode_scalar(lua: &Lua, value: &Value, out: &mut Vec<u8>) -> mlua::Result<()> {
    match value {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(_) | Value::Number(_) => {
            let n = number_of(value).unwrap_or(0.0);
            encode_number(lua, value, n, out)?;
        }
        Value::String(s) => encode_string(&s.as_bytes(), out),
        other => return Err(encode_error(lua, other, "type not supported")),
    }
    Ok(())
}

fn encode_number(lua: &Lua, value: &Value, n: f64, out: &mut Vec<u8>) -> mlua::Result<()> {
    if !n.is_finite() {
        return Err(encode_error(lua, value, "must not be NaN or Inf"));
    }
    out.extend_from_slice(fmt_g(n, CJSON_NUMBER_PRECISION).as_bytes());
    Ok(())
}

/// lua-cjson's escapes: `"` `\` `/`, the C0 controls (`\b \t \n \f \r` by name, the others
/// as `\u00XX`) and DEL; every other byte as it is.
fn encode_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            0x08 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            _ => out.push(c),
        }
    }
    out.push(b'"');
}

/// `lua_array_length`: the largest key when every key is a positive integer (0 for an
/// empty table), `None` for an object; an excessively sparse array is an error.
fn array_length(lua: &Lua, value: &Value, t: &Table) -> mlua::Result<Option<usize>> {
    let mut max = 0usize;
    let mut items = 0usize;
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, _) = pair?;
        match number_of(&k) {
            Some(n) if n >= 1.0 && n.floor() == n && n < 9.0e15 => {
                max = max.max(n as usize);
                items += 1;
            }
            _ => return Ok(None),
        }
    }
    if max > items * CJSON_SPARSE_RATIO && max > CJSON_SPARSE_SAFE {
        return Err(encode_error(lua, value, "excessively sparse array"));
    }
    Ok(Some(max))
}

/// C's `printf("%.<prec>g", x)` as glibc prints it (finite `x`).
pub(crate) fn fmt_g(x: f64, prec: usize) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let scientific = format!("{x:.*e}", prec - 1);
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exponent >= -4 && exponent < prec as i32 {
        strip(&format!("{:.*}", (prec as i32 - 1 - exponent) as usize, x))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mantissa), exponent.unsigned_abs())
    }
}

// ---------------------------------------------------------------------------------------
// cjson decode

#[derive(Clone, Debug, PartialEq)]
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    /// A tokenizer error with lua-cjson's text.
    Error(&'static str),
}

impl Token {
    fn name(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Str(_) => "T_STRING",
            Token::Number(_) => "T_NUMBER",
            Token::Boolean(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(e) => e,
        }
    }
}

struct Json<'a> {
    data: &'a [u8],
    pos: usize,
    depth: usize,
    /// The UTF-8 of the last `\u` escape read.
    pending_utf8: Vec<u8>,
}

impl Json<'_> {
    /// The next token and the index it starts at (lua-cjson reports `index + 1`).
    fn next(&mut self) -> (Token, usize) {
        while self
            .data
            .get(self.pos)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(&c) = self.data.get(self.pos) else {
            return (Token::End, start);
        };
        let single = match c {
            b'{' => Some(Token::ObjBegin),
            b'}' => Some(Token::ObjEnd),
            b'[' => Some(Token::ArrBegin),
            b']' => Some(Token::ArrEnd),
            b':' => Some(Token::Colon),
            b',' => Some(Token::Comma),
            _ => None,
        };
        if let Some(t) = single {
            self.pos += 1;
            return (t, start);
        }
        if c == b'"' {
            return self.string();
        }
        let rest = &self.data[self.pos..];
        if c == b'-' || c.is_ascii_digit() {
            return (self.number(), start);
        }
        for (word, tok) in [
            (&b"true"[..], Token::Boolean(true)),
            (b"false", Token::Boolean(false)),
            (b"null", Token::Null),
        ] {
            if rest.starts_with(word) {
                self.pos += word.len();
                return (tok, start);
            }
        }
        // decode_invalid_numbers is on: `+1`, inf and nan go to strtod too.
        let lower: Vec<u8> = rest.iter().take(3).map(u8::to_ascii_lowercase).collect();
        if c == b'+' || lower == b"inf" || lower == b"nan" {
            return (self.number(), start);
        }
        (Token::Error("invalid token"), start)
    }

    fn number(&mut self) -> Token {
        match strtod(&self.data[self.pos..]) {
            Some((n, used)) => {
                self.pos += used;
                Token::Number(n)
            }
            None => Token::Error("invalid number"),
        }
    }

    fn string(&mut self) -> (Token, usize) {
        let start = self.pos;
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.data.get(self.pos) else {
                return (Token::Error("unexpected end of string"), self.pos);
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return (Token::Str(out), start);
                }
                b'\\' => {
                    let esc_at = self.pos;
                    let Some(&e) = self.data.get(self.pos + 1) else {
                        return (Token::Error("unexpected end of string"), self.pos + 1);
                    };
                    let plain = match e {
                        b'"' => Some(b'"'),
                        b'\\' => Some(b'\\'),
                        b'/' => Some(b'/'),
                        b'b' => Some(8),
                        b'f' => Some(12),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        b'u' => None,
                        _ => return (Token::Error("invalid escape code"), esc_at),
                    };
                    match plain {
                        Some(b) => {
                            out.push(b);
                            self.pos += 2;
                        }
                        None => {
                            if self.unicode_escape().is_none() {
                                return (Token::Error("invalid unicode escape code"), esc_at);
                            }
                            out.append(&mut self.pending_utf8);
                        }
                    }
                }
                _ => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }
}

/// Four hex digits.
fn hex4(b: &[u8]) -> Option<u32> {
    if b.len() < 4 {
        return None;
    }
    let mut v = 0;
    for &c in &b[..4] {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

impl Json<'_> {
    /// At `\u`: decodes one escape (a surrogate pair takes two) into `pending_utf8`.
    fn unicode_escape(&mut self) -> Option<()> {
        let first = hex4(self.data.get(self.pos + 2..)?)?;
        let mut cp = first;
        let mut used = 6;
        if (0xd800..0xdc00).contains(&first) {
            // A high surrogate must be followed by `\u` and a low one.
            let rest = self.data.get(self.pos + 6..)?;
            if rest.len() < 6 || rest[0] != b'\\' || rest[1] != b'u' {
                return None;
            }
            let low = hex4(&rest[2..])?;
            if !(0xdc00..0xe000).contains(&low) {
                return None;
            }
            cp = (((first & 0x3ff) << 10) | (low & 0x3ff)) + 0x10000;
            used = 12;
        } else if (0xdc00..0xe000).contains(&first) {
            return None;
        }
        let mut buf = [0u8; 4];
        let s = char::from_u32(cp)?.encode_utf8(&mut buf);
        self.pending_utf8 = s.as_bytes().to_vec();
        self.pos += used;
        Some(())
    }
}

/// glibc `strtod` on the start of `s`: decimal (with fraction and exponent), hex integers
/// and fractions, `inf`/`infinity`/`nan`, an optional sign. Returns the value and the bytes
/// used, `None` when no number starts here.
fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let mut i = 0;
    let neg = match s.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let sign = if neg { -1.0 } else { 1.0 };
    let rest = &s[i..];
    let lower: Vec<u8> = rest.iter().take(8).map(u8::to_ascii_lowercase).collect();
    if lower.starts_with(b"infinity") {
        return Some((sign * f64::INFINITY, i + 8));
    }
    if lower.starts_with(b"inf") {
        return Some((sign * f64::INFINITY, i + 3));
    }
    if lower.starts_with(b"nan") {
        let mut j = i + 3;
        // nan(chars)
        if s.get(j) == Some(&b'(')
            && let Some(close) = s[j..].iter().position(|&c| c == b')')
            && s[j + 1..j + close]
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            j += close + 1;
        }
        return Some((sign * f64::NAN, j));
    }
    if rest.len() >= 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        let mut j = 2;
        let mut v = 0.0f64;
        let mut any = false;
        while let Some(d) = rest.get(j).and_then(|c| (*c as char).to_digit(16)) {
            v = v * 16.0 + f64::from(d);
            j += 1;
            any = true;
        }
        if rest.get(j) == Some(&b'.') {
            let mut scale = 1.0 / 16.0;
            let mut k = j + 1;
            while let Some(d) = rest.get(k).and_then(|c| (*c as char).to_digit(16)) {
                v += f64::from(d) * scale;
                scale /= 16.0;
                k += 1;
                any = true;
            }
            if any {
                j = k;
            }
        }
        if !any {
            // "0x" without digits: strtod reads the "0".
            return Some((sign * 0.0, i + 1));
        }
        if matches!(rest.get(j), Some(b'p' | b'P')) {
            let (e, used) = exponent_digits(&rest[j + 1..]);
            if used > 0 {
                v *= 2f64.powi(e);
                j += 1 + used;
            }
        }
        return Some((sign * v, i + j));
    }
    let mut j = 0;
    let mut digits = 0;
    while rest.get(j).is_some_and(u8::is_ascii_digit) {
        j += 1;
        digits += 1;
    }
    if rest.get(j) == Some(&b'.') {
        let mut k = j + 1;
        let mut frac = 0;
        while rest.get(k).is_some_and(u8::is_ascii_digit) {
            k += 1;
            frac += 1;
        }
        if digits + frac > 0 {
            j = k;
            digits += frac;
        }
    }
    if digits == 0 {
        return None;
    }
    if matches!(rest.get(j), Some(b'e' | b'E')) {
        let (_, used) = exponent_digits(&rest[j + 1..]);
        if used > 0 {
            j += 1 + used;
        }
    }
    let text = std::str::from_utf8(&rest[..j]).ok()?;
    let text = if text.starts_with('.') {
        format!("0{text}")
    } else {
        text.to_string()
    };
    let v: f64 = text.trim_end_matches('.').parse().ok()?;
    Some((sign * v, i + j))
}

/// An exponent: optional sign and digits. Returns its value (saturated) and bytes used
/// (0 when there are no digits).
fn exponent_digits(s: &[u8]) -> (i32, usize) {
    let mut i = 0;
    let neg = match s.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let start = i;
    let mut v: i32 = 0;
    while let Some(d) = s.get(i).filter(|c| c.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add(i32::from(d - b'0'));
        i += 1;
    }
    if i == start {
        return (0, 0);
    }
    (if neg { -v } else { v }, i)
}

fn cjson_decode(lua: &Lua, args: MultiValue) -> mlua::Result<Value> {
    if args.len() != 1 {
        return Err(arg_error(lua, 1, "expected 1 argument"));
    }
    let data: Vec<u8> = match &args[0] {
        Value::String(s) => s.as_bytes().to_vec(),
        v @ (Value::Integer(_) | Value::Number(_)) => {
            // luaL_checklstring converts a number as tostring does (%.14g).
            fmt_g(number_of(v).unwrap_or(0.0), 14).into_bytes()
        }
        other => {
            return Err(arg_error(
                lua,
                1,
                &format!("string expected, got {}", type_name(Some(other))),
            ));
        }
    };
    // lua-cjson's guess at UTF-16/32: a NUL among the first two bytes.
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err(lua_error(
            lua,
            "JSON parser does not support UTF-16 or UTF-32",
        ));
    }
    let mut json = Json {
        data: &data,
        pos: 0,
        depth: 0,
        pending_utf8: Vec::new(),
    };
    let value = decode(lua, &mut json)?;
    let (tok, at) = json.next();
    if tok != Token::End {
        return Err(expected(lua, "the end", &tok, at));
    }
    Ok(value)
}

fn expected(lua: &Lua, what: &str, found: &Token, at: usize) -> mlua::Error {
    lua_error(
        lua,
        &format!(
            "Expected {what} but found {} at character {}",
            found.name(),
            at + 1
        ),
    )
}

fn descend(lua: &Lua, json: &mut Json<'_>, at: usize) -> mlua::Result<()> {
    json.depth += 1;
    if json.depth > CJSON_MAX_DEPTH {
        return Err(lua_error(
            lua,
            &format!(
                "Found too many nested data structures ({}) at character {}",
                json.depth,
                at + 1
            ),
        ));
    }
    Ok(())
}

/// A table being read by `decode`.
enum DecodeFrame {
    /// After `{`: the table and the key whose value is being read.
    Object { table: Table, key: mlua::String },
    /// After `[`: the table and the index of the element being read.
    Array { table: Table, index: usize },
}

/// lua-cjson's `json_process_value` and its two contexts without recursion: the tables
/// open around the value being read are a stack on the heap, bounded by `decode_max_depth`
/// (1000; "Found too many nested data structures (1001) at character N"), not by the host's
/// stack. Each open table holds two Lua handles, at most 2,000 of mlua's ~8,000.
fn decode(lua: &Lua, json: &mut Json<'_>) -> mlua::Result<Value> {
    let mut open: Vec<DecodeFrame> = Vec::new();
    let (mut tok, mut at) = json.next();
    loop {
        // A value starts at `tok`: a scalar, an empty table, or a table to descend into.
        let mut value = match tok {
            Token::Str(s) => Value::String(lua.create_string(&s)?),
            Token::Number(n) => Value::Number(n),
            Token::Boolean(b) => Value::Boolean(b),
            Token::Null => json_null(),
            Token::ObjBegin => {
                descend(lua, json, at)?;
                let table = lua.create_table()?;
                let (first, fat) = json.next();
                if first == Token::ObjEnd {
                    json.depth -= 1;
                    Value::Table(table)
                } else {
                    let key = object_key(lua, json, first, fat)?;
                    open.push(DecodeFrame::Object { table, key });
                    (tok, at) = json.next();
                    continue;
                }
            }
            Token::ArrBegin => {
                descend(lua, json, at)?;
                let table = lua.create_table()?;
                let (first, fat) = json.next();
                if first == Token::ArrEnd {
                    json.depth -= 1;
                    Value::Table(table)
                } else {
                    open.push(DecodeFrame::Array { table, index: 1 });
                    (tok, at) = (first, fat);
                    continue;
                }
            }
            other => return Err(expected(lua, "value", &other, at)),
        };
        // Store the value in the innermost open table; a table that ends is itself the
        // value of the one around it.
        loop {
            let Some(frame) = open.last_mut() else {
                return Ok(value);
            };
            let (sep, sat) = match frame {
                DecodeFrame::Object { table, key } => {
                    table.raw_set(key.clone(), value)?;
                    json.next()
                }
                DecodeFrame::Array { table, index } => {
                    table.raw_set(*index, value)?;
                    *index += 1;
                    json.next()
                }
            };
            let is_object = matches!(frame, DecodeFrame::Object { .. });
            let end = if is_object {
                Token::ObjEnd
            } else {
                Token::ArrEnd
            };
            if sep == end {
                json.depth -= 1;
                let (DecodeFrame::Object { table, .. } | DecodeFrame::Array { table, .. }) =
                    open.pop().expect("a frame is open");
                value = Value::Table(table);
                continue;
            }
            if sep != Token::Comma {
                let what = if is_object {
                    "comma or object end"
                } else {
                    "comma or array end"
                };
                return Err(expected(lua, what, &sep, sat));
            }
            if let Some(DecodeFrame::Object { key, .. }) = open.last_mut() {
                let (ktok, kat) = json.next();
                *key = object_key(lua, json, ktok, kat)?;
            }
            (tok, at) = json.next();
            break;
        }
    }
}

/// An object's key and the colon after it (json_parse_object_context's order of checks);
/// the key is pushed before its value is read, as lua_pushlstring does there.
fn object_key(lua: &Lua, json: &mut Json<'_>, tok: Token, at: usize) -> mlua::Result<mlua::String> {
    let Token::Str(key) = tok else {
        return Err(expected(lua, "object key string", &tok, at));
    };
    let key = lua.create_string(&key)?;
    let (colon, cat) = json.next();
    if colon != Token::Colon {
        return Err(expected(lua, "colon", &colon, cat));
    }
    Ok(key)
}

// ---------------------------------------------------------------------------------------
// cmsgpack

fn msgpack_pack(lua: &Lua, args: MultiValue) -> mlua::Result<mlua::String> {
    if args.is_empty() {
        return Err(arg_error(lua, 0, "MessagePack pack needs input."));
    }
    let mut out = Vec::new();
    for v in args.iter() {
        pack_value(v, 0, &mut out)?;
    }
    lua.create_string(&out)
}

fn pack_value(v: &Value, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    match v {
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(_) | Value::Number(_) => {
            let n = number_of(v).unwrap_or(0.0);
            if n.is_finite()
                && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&n)
                && (n as i64) as f64 == n
            {
                pack_int(n as i64, out);
            } else if (n as f32) as f64 == n {
                out.push(0xca);
                out.extend_from_slice(&(n as f32).to_be_bytes());
            } else {
                out.push(0xcb);
                out.extend_from_slice(&n.to_be_bytes());
            }
        }
        Value::String(s) => {
            let b = s.as_bytes();
            let len = b.len();
            if len < 32 {
                out.push(0xa0 | len as u8);
            } else if len <= 0xff {
                out.extend_from_slice(&[0xd9, len as u8]);
            } else if len <= 0xffff {
                out.push(0xda);
                out.extend_from_slice(&(len as u16).to_be_bytes());
            } else {
                out.push(0xdb);
                out.extend_from_slice(&(len as u32).to_be_bytes());
            }
            out.extend_from_slice(&b);
        }
        Value::Table(t) if level < MSGPACK_MAX_NESTING => pack_table(t, level + 1, out)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn pack_int(i: i64, out: &mut Vec<u8>) {
    if i >= 0 {
        if i <= 127 {
            out.push(i as u8);
        } else if i <= 0xff {
            out.extend_from_slice(&[0xcc, i as u8]);
        } else if i <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(i as u16).to_be_bytes());
        } else if i <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(i as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(i as u64).to_be_bytes());
        }
    } else if i >= -32 {
        out.push(i as i8 as u8);
    } else if i >= -128 {
        out.extend_from_slice(&[0xd0, i as i8 as u8]);
    } else if i >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(i as i16).to_be_bytes());
    } else if i >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(i as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&i.to_be_bytes());
    }
}

fn pack_header(len: usize, small: u8, b16: u8, b32: u8, out: &mut Vec<u8>) {
    if len <= 15 {
        out.push(small | len as u8);
    } else if len <= 0xffff {
        out.push(b16);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(b32);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

/// An array when the keys are exactly 1..n (`table_is_an_array`), else a map.
fn pack_table(t: &Table, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    let mut count = 0usize;
    let mut max = 0usize;
    let mut array = true;
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, _) = pair?;
        match number_of(&k) {
            Some(n) if n >= 1.0 && n.floor() == n && n < 9.0e15 => {
                count += 1;
                max = max.max(n as usize);
            }
            _ => {
                array = false;
                break;
            }
        }
    }
    if array && max == count {
        let len = t.raw_len();
        pack_header(len, 0x90, 0xdc, 0xdd, out);
        for i in 1..=len {
            let v: Value = t.raw_get(i)?;
            pack_value(&v, level, out)?;
        }
    } else {
        let mut pairs = Vec::new();
        for pair in t.clone().pairs::<Value, Value>() {
            pairs.push(pair?);
        }
        pack_header(pairs.len(), 0x80, 0xde, 0xdf, out);
        for (k, v) in &pairs {
            pack_value(k, level, out)?;
            pack_value(v, level, out)?;
        }
    }
    Ok(())
}

enum Unpack {
    Missing,
    Bad,
}

/// `luaL_checkinteger` / `luaL_optinteger` (absent: `default`), truncated as C does.
fn int_arg(lua: &Lua, args: &MultiValue, narg: usize, default: Option<i64>) -> mlua::Result<i64> {
    let value = args.get(narg - 1);
    if let (None | Some(Value::Nil), Some(d)) = (value, default) {
        return Ok(d);
    }
    match value.and_then(|v| lua.coerce_number(v.clone()).ok().flatten()) {
        Some(n) if n.is_finite() => Ok(n as i64),
        Some(_) => Ok(i64::MIN),
        None => Err(arg_error(
            lua,
            narg,
            &format!("number expected, got {}", type_name(value)),
        )),
    }
}

fn msgpack_unpack(lua: &Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    unpack_full(lua, &args, 0, 0)
}

/// `cmsgpack.unpack_one(s [, offset])`: the offset of the next object (-1 at the end)
/// and one object.
fn msgpack_unpack_one(lua: &Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    let offset = int_arg(lua, &args, 2, Some(0))?;
    unpack_full(lua, &args, 1, offset)
}

/// `cmsgpack.unpack_limit(s, limit [, offset])`.
fn msgpack_unpack_limit(lua: &Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    let limit = int_arg(lua, &args, 2, None)?;
    let offset = int_arg(lua, &args, 3, Some(0))?;
    unpack_full(lua, &args, limit, offset)
}

/// lua-cmsgpack's `mp_unpack_full`: `limit` 0 with offset 0 decodes everything and
/// returns only the objects; otherwise the next offset (-1 when the input is used up)
/// comes first.
fn unpack_full(lua: &Lua, args: &MultiValue, limit: i64, offset: i64) -> mlua::Result<MultiValue> {
    let data: Vec<u8> = match args.front() {
        Some(Value::String(s)) => s.as_bytes().to_vec(),
        Some(v @ (Value::Integer(_) | Value::Number(_))) => {
            fmt_g(number_of(v).unwrap_or(0.0), 14).into_bytes()
        }
        other => {
            return Err(arg_error(
                lua,
                1,
                &format!("string expected, got {}", type_name(other)),
            ));
        }
    };
    let decode_all = limit == 0 && offset == 0;
    let len = data.len() as i64;
    if offset < 0 || limit < 0 {
        // (lua-cmsgpack prints the input length where it says "limit")
        return Err(lua_error(
            lua,
            &format!(
                "Invalid request to unpack with offset of {} and limit of {}.",
                offset as i32, len as i32
            ),
        ));
    }
    if offset > len {
        return Err(lua_error(
            lua,
            &format!(
                "Start offset {} greater than input length {}.",
                offset as i32, len as i32
            ),
        ));
    }
    let limit = if decode_all { i64::MAX } else { limit };
    // The Lua stack of the C function: its arguments (`unpack_one` and `unpack_limit` pop
    // all but the string first, lua_cmsgpack.c mp_unpack_one / mp_unpack_limit), then each
    // value returned, which stays there.
    let args = if decode_all { args.len() } else { 1 };
    let mut pos = offset as usize;
    let mut values = Vec::new();
    while pos < data.len() && (values.len() as i64) < limit {
        match unpack_value(lua, &data, &mut pos, args + values.len()) {
            Ok(v) => values.push(v),
            Err(Ok(Unpack::Missing)) => return Err(lua_error(lua, "Missing bytes in input.")),
            Err(Ok(Unpack::Bad)) => return Err(lua_error(lua, "Bad data format in input.")),
            Err(Err(e)) => return Err(e),
        }
    }
    if !decode_all {
        if let Err(Err(e)) = check_stack(lua, args + values.len(), "in function mp_unpack_full") {
            return Err(e);
        }
        let next = if pos == data.len() { -1.0 } else { pos as f64 };
        values.insert(0, Value::Number(next));
    }
    Ok(MultiValue::from_iter(values))
}

type UnpackResult = Result<Value, Result<Unpack, mlua::Error>>;

fn take<'a>(
    data: &'a [u8],
    pos: &mut usize,
    n: usize,
) -> Result<&'a [u8], Result<Unpack, mlua::Error>> {
    if data.len() - *pos < n {
        return Err(Ok(Unpack::Missing));
    }
    let s = &data[*pos..*pos + n];
    *pos += n;
    Ok(s)
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
}

/// `luaL_checkstack(L, 1, what)` of a C function whose stack holds `height` slots: Lua 5.1
/// refuses past LUAI_MAXCSTACK (lapi.c lua_checkstack) and luaL_checkstack raises
/// "stack overflow (what)" (lauxlib.c), with the script's position (luaL_error's level 1).
fn check_stack(lua: &Lua, height: usize, what: &str) -> Result<(), Result<Unpack, mlua::Error>> {
    if height + 1 > LUAI_MAXCSTACK {
        return Err(Err(lua_error(lua, &format!("stack overflow ({what})"))));
    }
    Ok(())
}

/// A table being filled by `unpack_value`; the table itself (and a map's key while its value
/// is read) waits in the Lua table `held`, so that Rust holds two Lua handles however deep
/// the input nests (mlua keeps each live handle in a stack of ~8,000 slots).
enum UnpackFrame {
    /// `left` elements to read; the next one is at index `next`.
    Array { left: usize, next: usize },
    /// `left` pairs to read; `key`: the key of the pair being read has been read.
    Map { left: usize, key: bool },
}

/// lua-cmsgpack's `mp_decode_to_lua_type` without recursion. Redis runs the C version with
/// no depth limit of its own: what stops it is the Lua stack of the C function, 8,000 slots
/// (LUAI_MAXCSTACK), `height` of them in use when this value starts (the arguments and the
/// values returned so far). An open array holds two (the table and the index being
/// filled), an open map one and its key one more, and every value starts with
/// `luaL_checkstack(L, 1, "too many return values at once; ...")` and every array with
/// `luaL_checkstack(L, 1, "in function mp_decode_to_lua_array")` after its table
/// (lua_cmsgpack.c:552-590 in Redis 7.0.15). So 3,999 nested arrays unpack and 4,000 fail,
/// as a real Redis 7.0.15 does (tests/conformance/recorded/lua-nesting.txt).
fn unpack_value(lua: &Lua, data: &[u8], pos: &mut usize, base: usize) -> UnpackResult {
    let held = lua.create_table().map_err(Err)?;
    // Invariant: `held[1..=top]` are the open tables, each followed by its key while a map's
    // value is read (a nil key is held as a hole, hence the count kept here).
    let mut top = 0usize;
    let mut open: Vec<UnpackFrame> = Vec::new();
    let mut height = base;
    loop {
        // One value starts here.
        take(data, pos, 1)?;
        *pos -= 1;
        check_stack(
            lua,
            height,
            "too many return values at once; use unpack_one or unpack_limit instead.",
        )?;
        let c = take(data, pos, 1)?[0];
        let num = |n: f64| Value::Number(n);
        let mut value = match c {
            0x00..=0x7f => num(f64::from(c)),
            0xe0..=0xff => num(f64::from(c as i8)),
            0xcc => num(be(take(data, pos, 1)?) as f64),
            0xcd => num(be(take(data, pos, 2)?) as f64),
            0xce => num(be(take(data, pos, 4)?) as f64),
            0xcf => num(be(take(data, pos, 8)?) as f64),
            0xd0 => num(f64::from(take(data, pos, 1)?[0] as i8)),
            0xd1 => num(f64::from(be(take(data, pos, 2)?) as u16 as i16)),
            0xd2 => num(f64::from(be(take(data, pos, 4)?) as u32 as i32)),
            0xd3 => num(be(take(data, pos, 8)?) as i64 as f64),
            0xc0 => Value::Nil,
            0xc2 => Value::Boolean(false),
            0xc3 => Value::Boolean(true),
            0xca => num(f64::from(f32::from_bits(be(take(data, pos, 4)?) as u32))),
            0xcb => num(f64::from_bits(be(take(data, pos, 8)?))),
            0xa0..=0xbf | 0xd9 | 0xda | 0xdb | 0xc4 | 0xc5 | 0xc6 => {
                let len = match c {
                    0xa0..=0xbf => usize::from(c & 0x1f),
                    0xd9 | 0xc4 => be(take(data, pos, 1)?) as usize,
                    0xda | 0xc5 => be(take(data, pos, 2)?) as usize,
                    _ => be(take(data, pos, 4)?) as usize,
                };
                let s = take(data, pos, len)?;
                Value::String(lua.create_string(s).map_err(Err)?)
            }
            0x90..=0x9f | 0xdc | 0xdd | 0x80..=0x8f | 0xde | 0xdf => {
                let array = matches!(c, 0x90..=0x9f | 0xdc | 0xdd);
                let len = match c {
                    0x80..=0x9f => usize::from(c & 0x0f),
                    0xdc | 0xde => be(take(data, pos, 2)?) as usize,
                    _ => be(take(data, pos, 4)?) as usize,
                };
                // lua_newtable, and for an array its check.
                height += 1;
                if array {
                    check_stack(lua, height, "in function mp_decode_to_lua_array")?;
                }
                let table = lua.create_table().map_err(Err)?;
                if len == 0 {
                    height -= 1;
                    Value::Table(table)
                } else {
                    top += 1;
                    held.raw_set(top, table).map_err(Err)?;
                    if array {
                        // lua_pushnumber(L, index): the element goes above it.
                        height += 1;
                        open.push(UnpackFrame::Array { left: len, next: 1 });
                    } else {
                        open.push(UnpackFrame::Map {
                            left: len,
                            key: false,
                        });
                    }
                    continue;
                }
            }
            _ => return Err(Ok(Unpack::Bad)),
        };
        // Store the value in the innermost open table (lua_settable); a table that is full
        // is itself the value of the one around it.
        loop {
            let Some(frame) = open.last_mut() else {
                return Ok(value);
            };
            match frame {
                UnpackFrame::Array { left, next } => {
                    let table: Table = held.raw_get(top).map_err(Err)?;
                    table.raw_set(*next, value).map_err(Err)?;
                    *next += 1;
                    *left -= 1;
                    if *left > 0 {
                        break;
                    }
                    // The table, and the index slot above it.
                    height -= 2;
                }
                UnpackFrame::Map { left, key } => {
                    if !*key {
                        // The key waits (one slot) while its value is read.
                        top += 1;
                        held.raw_set(top, value).map_err(Err)?;
                        *key = true;
                        height += 1;
                        break;
                    }
                    let k: Value = held.raw_get(top).map_err(Err)?;
                    held.raw_set(top, Value::Nil).map_err(Err)?;
                    top -= 1;
                    // lua_settable raises from inside the C function: no script position.
                    match &k {
                        Value::Nil => return Err(Err(raise_msg("table index is nil"))),
                        Value::Number(n) if n.is_nan() => {
                            return Err(Err(raise_msg("table index is NaN")));
                        }
                        _ => {}
                    }
                    let table: Table = held.raw_get(top).map_err(Err)?;
                    table.raw_set(k, value).map_err(Err)?;
                    *key = false;
                    height -= 1;
                    *left -= 1;
                    if *left > 0 {
                        break;
                    }
                    height -= 1;
                }
            }
            let table: Table = held.raw_get(top).map_err(Err)?;
            held.raw_set(top, Value::Nil).map_err(Err)?;
            top -= 1;
            open.pop();
            value = Value::Table(table);
        }
    }
}
