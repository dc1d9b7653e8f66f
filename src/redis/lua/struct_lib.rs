//! Lua's `struct` library as Redis 7.0.15 ships it (`deps/lua/src/lua_struct.c`, Roberto
//! Ierusalimschy's struct 0.2 with Redis's patches), for x86-64 Linux, where Redis runs:
//! `struct.pack`, `struct.unpack` and `struct.size` over the formats `> < ! x b B h H l L
//! T i I f d c s` (and spaces), with C's sizes there (short 2, int 4, long and size_t 8,
//! float 4, double 8, the default byte order little-endian, `!` alone aligning to 8), its
//! alignment rule and its error texts (tests/conformance/recorded/lua-struct.txt).
//!
//! What C leaves to the machine is done as x86-64 does it: a number outside an integer's
//! range converts as `cvttsd2si` converts it (the sign bit alone), a shift by 64 bits or
//! more shifts by its low six bits. Memory is bounded by the arguments: an integer takes at
//! most 32 bytes, a padding at most 7, a `c` or `s` field no more than its string holds.
//!
//! Not reproduced: `pack` reads a missing argument from its own stack, where the first one
//! past the arguments is its nil mark (modelled: "got nil") and the next ones are the
//! pieces its buffer flushed after 8 KiB of output (here: "got no value"); and `unpack`
//! returns at most what mlua can hand back, about 7,900 values, where Redis stops at
//! 7,997 (`stack overflow (too many results)` past that, which is modelled).

use mlua::{Lua, MultiValue, Table, Value};

use super::lauxlib::{arg_error, lua_error, number_to_i64, type_name};

/// `MAXINTSIZE`: the widest integer a format may ask for.
const MAX_INT_SIZE: i64 = 32;
/// `MAXALIGN` on x86-64: the padding of a double after a char (8), more than an int's 4.
const MAX_ALIGN: i64 = 8;
/// `LUAI_MAXCSTACK`: the stack slots a C function may use, which bound unpack's results.
const LUAI_MAXCSTACK: usize = 8000;

/// The byte order and alignment a format sets as it goes.
#[derive(Clone, Copy)]
struct Header {
    big_endian: bool,
    align: i64,
}

impl Default for Header {
    /// `defaultoptions`: native order (little-endian) and no alignment.
    fn default() -> Header {
        Header {
            big_endian: false,
            align: 1,
        }
    }
}

/// Installs `struct` as a read-only global, as Redis loads it into every script's state.
pub(crate) fn install(
    lua: &Lua,
    globals: &Table,
    freeze: &dyn Fn(Table, Table) -> mlua::Result<Table>,
) -> mlua::Result<()> {
    let lib = lua.create_table()?;
    lib.raw_set("pack", lua.create_function(pack)?)?;
    lib.raw_set("unpack", lua.create_function(unpack)?)?;
    lib.raw_set("size", lua.create_function(size)?)?;
    globals.raw_set("struct", freeze(lua.create_table()?, lib)?)?;
    Ok(())
}

/// A format being read, one option at a time.
struct Format<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Format<'_> {
    /// The next option, or None at the end (or at a NUL, where C's string ends).
    fn next_option(&mut self) -> Option<u8> {
        let c = *self.bytes.get(self.pos).filter(|&&c| c != 0)?;
        self.pos += 1;
        Some(c)
    }

    /// `getnum`: the digits after an option, or `default` when there are none.
    fn number(&mut self, lua: &Lua, default: i64) -> mlua::Result<i64> {
        if !self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: i64 = 0;
        while let Some(&d) = self.bytes.get(self.pos).filter(|d| d.is_ascii_digit()) {
            let d = i64::from(d - b'0');
            if a > i64::from(i32::MAX) / 10 || a * 10 > i64::from(i32::MAX) - d {
                return Err(lua_error(lua, "integral size overflow"));
            }
            a = a * 10 + d;
            self.pos += 1;
        }
        Ok(a)
    }

    /// `optsize`: the bytes an option takes (0 for those that take none by themselves).
    fn option_size(&mut self, lua: &Lua, opt: u8) -> mlua::Result<i64> {
        Ok(match opt {
            b'B' | b'b' | b'x' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.number(lua, 1)?,
            b'i' | b'I' => {
                let size = self.number(lua, 4)?;
                if size > MAX_INT_SIZE {
                    return Err(lua_error(
                        lua,
                        &format!("integral size {size} is larger than limit of {MAX_INT_SIZE}"),
                    ));
                }
                size
            }
            _ => 0,
        })
    }

    /// `controloptions`: a space, `>`, `<` or `!n`; anything else is an error of the
    /// function's first argument.
    fn control(&mut self, lua: &Lua, opt: u8, h: &mut Header) -> mlua::Result<()> {
        match opt {
            b' ' => Ok(()),
            b'>' => {
                h.big_endian = true;
                Ok(())
            }
            b'<' => {
                h.big_endian = false;
                Ok(())
            }
            b'!' => {
                let a = self.number(lua, MAX_ALIGN)?;
                if a <= 0 || a & (a - 1) != 0 {
                    return Err(lua_error(
                        lua,
                        &format!("alignment {a} is not a power of 2"),
                    ));
                }
                h.align = a;
                Ok(())
            }
            _ => Err(arg_error(
                lua,
                1,
                &format!("invalid format option '{}'", char::from(opt)),
            )),
        }
    }
}

/// `gettoalign`: the padding before an option of `size` at offset `len`.
fn to_align(len: i64, h: &Header, opt: u8, size: i64) -> i64 {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size - (len & (size - 1))) & (size - 1)
}

/// Argument `narg` as `b_pack` finds it on its stack: past the arguments it pushed a nil
/// (its mark before the buffer), so the first missing argument is that nil.
fn pack_arg(args: &MultiValue, narg: usize) -> Option<&Value> {
    const MARK: Value = Value::Nil;
    match args.get(narg - 1) {
        Some(v) => Some(v),
        None if narg == args.len() + 1 => Some(&MARK),
        None => None,
    }
}

/// `luaL_checklstring`: a string, or a number as Lua writes it.
fn check_bytes(lua: &Lua, args: &MultiValue, narg: usize) -> mlua::Result<Vec<u8>> {
    check_bytes_of(lua, args.get(narg - 1), narg)
}

fn check_bytes_of(lua: &Lua, value: Option<&Value>, narg: usize) -> mlua::Result<Vec<u8>> {
    match value.and_then(|v| lua.coerce_string(v.clone()).ok().flatten()) {
        Some(s) => Ok(s.as_bytes().to_vec()),
        None => Err(arg_error(
            lua,
            narg,
            &format!("string expected, got {}", type_name(value)),
        )),
    }
}

/// `luaL_checknumber`.
fn check_number(lua: &Lua, args: &MultiValue, narg: usize) -> mlua::Result<f64> {
    check_number_of(lua, args.get(narg - 1), narg)
}

fn check_number_of(lua: &Lua, value: Option<&Value>, narg: usize) -> mlua::Result<f64> {
    match value.and_then(|v| lua.coerce_number(v.clone()).ok().flatten()) {
        Some(n) => Ok(n),
        None => Err(arg_error(
            lua,
            narg,
            &format!("number expected, got {}", type_name(value)),
        )),
    }
}

/// `(unsigned long)` of a double as gcc compiles it for x86-64: unless it is at least 2^63
/// a signed conversion (NaN included: the sign bit alone), from there the conversion of
/// `x - 2^63` with the top bit flipped (so 2^64 and past give 0).
fn double_to_u64(x: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x.is_nan() || x < TWO_63 {
        number_to_i64(x) as u64
    } else {
        (number_to_i64(x - TWO_63) as u64) ^ (1 << 63)
    }
}

/// `putinteger`: `size` bytes of the number, in the header's order.
fn put_integer(n: f64, big_endian: bool, size: usize, out: &mut Vec<u8>) {
    let mut value = if n < 0.0 {
        number_to_i64(n) as u64
    } else {
        double_to_u64(n)
    };
    let mut buff = [0u8; MAX_INT_SIZE as usize];
    for i in 0..size {
        let at = if big_endian { size - 1 - i } else { i };
        buff[at] = (value & 0xff) as u8;
        value >>= 8;
    }
    out.extend_from_slice(&buff[..size]);
}

/// `getinteger`: the number `size` bytes hold.
fn get_integer(data: &[u8], big_endian: bool, signed: bool, size: usize) -> f64 {
    let mut l: u64 = 0;
    for i in 0..size {
        let at = if big_endian { i } else { size - 1 - i };
        l = (l << 8) | u64::from(data[at]);
    }
    if !signed {
        return l as f64;
    }
    // x86-64 shifts by the count's low six bits (size 0 and sizes past 8 included).
    let shift = ((size as i64) * 8 - 1) as u32 & 63;
    let mask = u64::MAX << shift;
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

/// `b_pack`.
fn pack(lua: &Lua, args: MultiValue) -> mlua::Result<mlua::String> {
    let fmt = check_bytes(lua, &args, 1)?;
    let mut fmt = Format {
        bytes: &fmt,
        pos: 0,
    };
    let mut h = Header::default();
    let mut arg = 2;
    let mut total: i64 = 0;
    let mut out = Vec::new();
    while let Some(opt) = fmt.next_option() {
        let mut size = fmt.option_size(lua, opt)?;
        let pad = to_align(total, &h, opt, size);
        total += pad;
        out.resize(out.len() + pad as usize, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number_of(lua, pack_arg(&args, arg), arg)?;
                arg += 1;
                put_integer(n, h.big_endian, size as usize, &mut out);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number_of(lua, pack_arg(&args, arg), arg)? as f32;
                arg += 1;
                let b = f.to_le_bytes();
                push_ordered(&b, h.big_endian, &mut out);
            }
            b'd' => {
                let d = check_number_of(lua, pack_arg(&args, arg), arg)?;
                arg += 1;
                push_ordered(&d.to_le_bytes(), h.big_endian, &mut out);
            }
            b'c' | b's' => {
                let s = check_bytes_of(lua, pack_arg(&args, arg), arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len() as i64;
                }
                if (s.len() as i64) < size {
                    // luaL_argcheck names the argument after the string (arg was advanced).
                    return Err(arg_error(lua, arg, "string too short"));
                }
                out.extend_from_slice(&s[..size as usize]);
                if opt == b's' {
                    out.push(0);
                    size += 1;
                }
            }
            _ => fmt.control(lua, opt, &mut h)?,
        }
        total += size;
    }
    lua.create_string(&out)
}

/// Little-endian bytes in the header's order (`correctbytes` on x86-64).
fn push_ordered(le: &[u8], big_endian: bool, out: &mut Vec<u8>) {
    if big_endian {
        out.extend(le.iter().rev());
    } else {
        out.extend_from_slice(le);
    }
}

/// `b_unpack`: the values, then the position after them.
fn unpack(lua: &Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    let fmt = check_bytes(lua, &args, 1)?;
    let data = check_bytes(lua, &args, 2)?;
    let ld = data.len() as u64;
    // luaL_optinteger, then stored in a size_t: a negative offset wraps to a huge one.
    let pos = match args.get(2) {
        None | Some(Value::Nil) => 1u64,
        Some(_) => number_to_i64(check_integer_arg(lua, &args, 3)?) as u64,
    };
    if pos == 0 {
        return Err(arg_error(lua, 3, "offset must be 1 or greater"));
    }
    let mut pos = pos - 1;
    let mut fmt = Format {
        bytes: &fmt,
        pos: 0,
    };
    let mut h = Header::default();
    let mut out: Vec<Value> = Vec::new();
    let too_short = |lua: &Lua| arg_error(lua, 2, "data string too short");
    let fits = |pos: u64, size: u64| size <= ld && pos <= ld - size;
    while let Some(opt) = fmt.next_option() {
        let mut size = fmt.option_size(lua, opt)? as u64;
        pos = pos.wrapping_add(to_align(pos as i64, &h, opt, size as i64) as u64);
        if !fits(pos, size) {
            return Err(too_short(lua));
        }
        // luaL_checkstack(L, 2): the arguments and the results so far, and two more.
        if args.len() + out.len() + 2 > LUAI_MAXCSTACK {
            return Err(lua_error(lua, "stack overflow (too many results)"));
        }
        let at = pos as usize;
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let signed = opt.is_ascii_lowercase();
                let n = get_integer(&data[at..], h.big_endian, signed, size as usize);
                out.push(Value::Number(n));
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = ordered(&data[at..at + 4], h.big_endian);
                out.push(Value::Number(f64::from(f32::from_le_bytes(b))));
            }
            b'd' => {
                let b: [u8; 8] = ordered(&data[at..at + 8], h.big_endian);
                out.push(Value::Number(f64::from_le_bytes(b)));
            }
            b'c' => {
                if size == 0 {
                    size = previous_size(lua, &mut out)?;
                    if !fits(pos, size) {
                        return Err(too_short(lua));
                    }
                }
                let end = at + size as usize;
                out.push(Value::String(lua.create_string(&data[at..end])?));
            }
            b's' => {
                let Some(nul) = data[at..].iter().position(|&b| b == 0) else {
                    return Err(lua_error(lua, "unfinished string in data"));
                };
                size = nul as u64 + 1;
                out.push(Value::String(lua.create_string(&data[at..at + nul])?));
            }
            _ => fmt.control(lua, opt, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    out.push(Value::Number(pos.wrapping_add(1) as i64 as f64));
    Ok(MultiValue::from_iter(out))
}

/// `c0` in unpack: the previous result (a number, or a string that reads as one) is the
/// size, and leaves the results.
fn previous_size(lua: &Lua, out: &mut Vec<Value>) -> mlua::Result<u64> {
    let previous = match out.last() {
        Some(v) => lua.coerce_number(v.clone()).ok().flatten(),
        None => None,
    };
    let Some(n) = previous else {
        return Err(lua_error(lua, "format 'c0' needs a previous size"));
    };
    out.pop();
    // (size_t) of the number: a negative one wraps, and is too long.
    Ok(if n < 0.0 {
        number_to_i64(n) as u64
    } else {
        double_to_u64(n)
    })
}

/// `luaL_checkinteger`'s number (truncated by the caller).
fn check_integer_arg(lua: &Lua, args: &MultiValue, narg: usize) -> mlua::Result<f64> {
    check_number(lua, args, narg)
}

/// `N` bytes in little-endian order, read in the header's order.
fn ordered<const N: usize>(bytes: &[u8], big_endian: bool) -> [u8; N] {
    let mut b = [0u8; N];
    b.copy_from_slice(&bytes[..N]);
    if big_endian {
        b.reverse();
    }
    b
}

/// `b_size`: the bytes `pack` would make of a format without strings.
fn size(lua: &Lua, args: MultiValue) -> mlua::Result<f64> {
    let fmt = check_bytes(lua, &args, 1)?;
    let mut fmt = Format {
        bytes: &fmt,
        pos: 0,
    };
    let mut h = Header::default();
    let mut pos: i64 = 0;
    while let Some(opt) = fmt.next_option() {
        let size = fmt.option_size(lua, opt)?;
        pos = pos.wrapping_add(to_align(pos, &h, opt, size));
        if opt == b's' {
            return Err(arg_error(lua, 1, "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(arg_error(lua, 1, "option 'c0' has no fixed size"));
        }
        // Letters are options: one that is none takes no room (and is no error here).
        if !opt.is_ascii_alphanumeric() {
            fmt.control(lua, opt, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(pos as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_wrap_as_x86_64_converts_doubles() {
        assert_eq!(double_to_u64(18_446_744_073_709_551_616.0), 0);
        assert_eq!(double_to_u64(9_223_372_036_854_775_808.0), 1 << 63);
        assert_eq!(double_to_u64(f64::NAN), 1 << 63);
        let mut out = Vec::new();
        put_integer(-1.0, true, 2, &mut out);
        put_integer(258.0, false, 2, &mut out);
        assert_eq!(out, [0xff, 0xff, 2, 1]);
    }

    #[test]
    fn signed_reads_extend_the_sign_of_their_width() {
        assert_eq!(get_integer(&[0xff, 0xfe], true, true, 2), -2.0);
        assert_eq!(get_integer(&[0xff, 0xfe], true, false, 2), 65534.0);
        assert_eq!(get_integer(&[0x80], false, true, 1), -128.0);
    }

    #[test]
    fn padding_aligns_to_the_smaller_of_the_size_and_the_alignment() {
        let h = Header {
            big_endian: false,
            align: 8,
        };
        assert_eq!(to_align(1, &h, b'i', 4), 3);
        assert_eq!(to_align(1, &h, b'd', 8), 7);
        assert_eq!(to_align(1, &h, b'c', 4), 0);
        assert_eq!(to_align(1, &Header::default(), b'd', 8), 0);
    }
}
