//! A structure-aware mutator for model files (RON) and conformance corpus files: it knows
//! tokens (strings, numbers, names, brackets), lists and `field: value` pairs well enough to
//! make inputs that get past the parser and into validation and the run, and falls back on
//! byte flips and truncation for the parser itself. Deterministic: every choice comes from
//! the caller's ChaCha stream.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::Rng;

/// Uniform in `0..n` (`n > 0`); the modulo bias is irrelevant for fuzzing.
pub fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

pub fn pick<'a, T>(rng: &mut ChaCha8Rng, xs: &'a [T]) -> &'a T {
    &xs[below(rng, xs.len())]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `"..."`, escapes included (an unterminated one runs to the end of its line).
    Str,
    /// `-12`, `1_000`, `0x1F`, `1.5e3`.
    Num,
    /// `name`, `set-px-del`, `random_faults`.
    Ident,
    /// Whitespace and `//` comments.
    Space,
    /// One other character: `( ) [ ] , :` and the rest.
    Punct,
}

#[derive(Clone, Copy, Debug)]
pub struct Tok {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

/// Splits `s` into tokens covering it exactly (every byte in one token, at char bounds).
pub fn tokens(s: &str) -> Vec<Tok> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let c = b[i];
        let kind = if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            Kind::Str
        } else if c.is_ascii_digit()
            || ((c == b'-' || c == b'+') && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            Kind::Num
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'-') {
                i += 1;
            }
            Kind::Ident
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            Kind::Space
        } else if c.is_ascii_whitespace() {
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            Kind::Space
        } else {
            i += 1;
            while i < b.len() && !s.is_char_boundary(i) {
                i += 1;
            }
            Kind::Punct
        };
        // A string's escape may step past the end or into a multi-byte char.
        while i < b.len() && !s.is_char_boundary(i) {
            i += 1;
        }
        let end = i.min(b.len());
        out.push(Tok { kind, start, end });
        i = end;
    }
    out
}

/// Bare numbers at the edges of every integer type the loader and parser use.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "255",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e308",
    "-0",
    "0x7fffffff",
    "1_000_000_000",
];

/// Durations at the edges: zero, one unit, a day in three spellings, the end of u64 and i64.
const DURATIONS: &[&str] = &[
    "\"0ms\"",
    "\"1ns\"",
    "\"1ms\"",
    "\"-1ms\"",
    "\"24h\"",
    "\"86400s\"",
    "\"86400000ms\"",
    "\"1000000h\"",
    "\"18446744073709551615ns\"",
    "\"18446744073709551615ms\"",
    "\"9223372036854775807ns\"",
    "\"9223372036854775808ns\"",
    "\"-9223372036854775808ns\"",
    "\"0.0000001ms\"",
    "\"1e3s\"",
    "\"1.5.5s\"",
    "\"ms\"",
    "\"\"",
    "\"2s\"",
    "\"100ms\"",
];

/// Text that parsers get wrong: control characters, a BOM, right-to-left override, wide
/// chars, escapes, lone quotes and brackets, `->` and `#` of the corpus format.
const NASTY: &[&str] = &[
    "\u{0}",
    "\u{feff}",
    "\u{202e}",
    "é",
    "名前",
    "🦀",
    "\r",
    "\r\n",
    "\t",
    "\\",
    "\\u{ffff}",
    "\\x",
    "\\xZZ",
    "\"",
    "'",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "->",
    "#",
    "# case: x",
    "# topology: master-replica",
    "@",
    "~",
    "{unix_ms+",
    "{unix_s-9223372036854775808}",
    "Some(",
    "None",
    "//",
    "/*",
];

/// The positions (byte ranges) of the elements of the list or tuple opened at token `open`,
/// and the index of its closing token (None when it is never closed).
fn elements(toks: &[Tok], text: &str, open: usize) -> (Vec<(usize, usize)>, Option<usize>) {
    let mut depth = 0i32;
    let mut elems = Vec::new();
    let mut elem_start = toks[open].end;
    for (k, t) in toks.iter().enumerate().skip(open) {
        if t.kind != Kind::Punct {
            continue;
        }
        match &text[t.start..t.end] {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    if !text[elem_start..t.start].trim().is_empty() {
                        elems.push((elem_start, t.start));
                    }
                    return (elems, Some(k));
                }
            }
            "," if depth == 1 => {
                elems.push((elem_start, t.start));
                elem_start = t.end;
            }
            _ => {}
        }
    }
    (elems, None)
}

fn puncts(toks: &[Tok], text: &str, which: &[&str]) -> Vec<usize> {
    toks.iter()
        .enumerate()
        .filter(|(_, t)| t.kind == Kind::Punct && which.contains(&&text[t.start..t.end]))
        .map(|(k, _)| k)
        .collect()
}

fn replace(text: &str, start: usize, end: usize, with: &str) -> String {
    let mut s = String::with_capacity(text.len() + with.len());
    s.push_str(&text[..start]);
    s.push_str(with);
    s.push_str(&text[end..]);
    s
}

/// Most bytes one repetition adds: a mutant beyond the caller's cap is dropped anyway, and
/// 5,000 copies of a 50 KB list would cost the fuzzer 250 MB for nothing.
const MAX_GROWTH: usize = 256 << 10;

/// How many times a duplicated element of `len` bytes is repeated: mostly a few, sometimes
/// thousands.
fn repeat_count(rng: &mut ChaCha8Rng, len: usize) -> usize {
    let n = *pick(rng, &[2, 2, 3, 5, 10, 50, 100, 300, 1000, 5000]);
    n.min(1 + MAX_GROWTH / len.max(1))
}

/// Which mutations to draw from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Everything, byte flips and truncation included (for the parsers).
    Any,
    /// Mutations that keep the text mostly well formed (for load-then-run: more of the
    /// inputs get past the loader into a run).
    Structural,
}

/// One mutation of `text`; `donors` are other inputs of the same format to splice from.
pub fn mutate_once(rng: &mut ChaCha8Rng, text: &str, donors: &[String], style: Style) -> String {
    let toks = tokens(text);
    if toks.is_empty() {
        return pick(rng, NASTY).to_string();
    }
    let choice = match style {
        Style::Any => below(rng, 14),
        Style::Structural => *pick(rng, &[2, 3, 3, 4, 4, 5, 6, 7, 9, 10, 11, 12]),
    };
    match choice {
        // A few bit flips anywhere.
        0 => {
            let mut b = text.as_bytes().to_vec();
            for _ in 0..=below(rng, 4) {
                let k = below(rng, b.len());
                b[k] ^= 1 << below(rng, 8);
            }
            String::from_utf8_lossy(&b).into_owned()
        }
        // Truncation at any char boundary.
        1 => {
            let mut k = below(rng, text.len());
            while !text.is_char_boundary(k) {
                k -= 1;
            }
            text[..k].to_string()
        }
        // A run of tokens replaced by a run of a donor's tokens.
        2 => {
            let donor = pick(rng, donors);
            let dt = tokens(donor);
            if dt.is_empty() {
                return text.to_string();
            }
            let i = below(rng, toks.len());
            let j = (i + below(rng, 8)).min(toks.len() - 1);
            let di = below(rng, dt.len());
            let dj = (di + below(rng, 16)).min(dt.len() - 1);
            replace(
                text,
                toks[i].start,
                toks[j].end,
                &donor[dt[di].start..dt[dj].end],
            )
        }
        // A number or duration replaced by a boundary value.
        3 => {
            let nums: Vec<&Tok> = toks
                .iter()
                .filter(|t| {
                    t.kind == Kind::Num
                        || (t.kind == Kind::Str
                            && text[t.start..t.end]
                                .trim_start_matches('"')
                                .starts_with(|c: char| c.is_ascii_digit() || c == '-'))
                })
                .collect();
            let Some(t) = (!nums.is_empty()).then(|| *pick(rng, &nums)) else {
                return text.to_string();
            };
            let with = if below(rng, 2) == 0 {
                pick(rng, NUMBERS)
            } else {
                pick(rng, DURATIONS)
            };
            replace(text, t.start, t.end, with)
        }
        // A list or tuple element repeated many times (duplicate names, repeated targets,
        // many faults, many fields).
        4 => {
            let opens = puncts(&toks, text, &["[", "("]);
            if opens.is_empty() {
                return text.to_string();
            }
            let o = *pick(rng, &opens);
            let (elems, _) = elements(&toks, text, o);
            if elems.is_empty() {
                return text.to_string();
            }
            let (s, e) = *pick(rng, &elems);
            let el = text[s..e].trim();
            let n = repeat_count(rng, el.len() + 2);
            let mut with = String::with_capacity((el.len() + 2) * n);
            for _ in 0..n {
                with.push_str(el);
                with.push_str(", ");
            }
            replace(text, s, s, &with)
        }
        // A `field: value` deleted, or written twice.
        5 | 6 => {
            let fields: Vec<usize> = (0..toks.len())
                .filter(|&k| {
                    toks[k].kind == Kind::Ident
                        && toks[k + 1..]
                            .iter()
                            .find(|t| t.kind != Kind::Space)
                            .is_some_and(|t| &text[t.start..t.end] == ":")
                })
                .collect();
            if fields.is_empty() {
                return text.to_string();
            }
            let k = *pick(rng, &fields);
            // The value runs to the next comma or closing bracket at the field's depth.
            let mut depth = 0i32;
            let mut end = text.len();
            for t in &toks[k..] {
                if t.kind != Kind::Punct {
                    continue;
                }
                match &text[t.start..t.end] {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" if depth == 0 => {
                        end = t.start;
                        break;
                    }
                    ")" | "]" | "}" => depth -= 1,
                    "," if depth == 0 => {
                        end = t.end;
                        break;
                    }
                    _ => {}
                }
            }
            let field = &text[toks[k].start..end];
            if choice == 5 {
                replace(text, toks[k].start, end, "")
            } else {
                let sep = if field.trim_end().ends_with(',') {
                    ""
                } else {
                    ", "
                };
                replace(text, toks[k].start, toks[k].start, &format!("{field}{sep}"))
            }
        }
        // A list emptied.
        7 => {
            let opens = puncts(&toks, text, &["["]);
            if opens.is_empty() {
                return text.to_string();
            }
            let o = *pick(rng, &opens);
            match elements(&toks, text, o) {
                (_, Some(c)) => replace(text, toks[o].end, toks[c].start, ""),
                _ => text.to_string(),
            }
        }
        // Deep nesting at a token boundary.
        8 => {
            let k = below(rng, toks.len());
            let depth = *pick(rng, &[10, 100, 1000, 10_000, 100_000]);
            let (open, close) = *pick(
                rng,
                &[
                    ("(", ")"),
                    ("[", "]"),
                    ("Some(", ")"),
                    ("[(", ")]"),
                    ("{", "}"),
                ],
            );
            let mut with = open.repeat(depth);
            if below(rng, 2) == 0 {
                with.push('1');
                with.push_str(&close.repeat(depth));
            }
            replace(text, toks[k].start, toks[k].start, &with)
        }
        // A string or name replaced by another of the same file (duplicate names, a
        // client named like a node, a target that names itself).
        9 => {
            let names: Vec<&Tok> = toks
                .iter()
                .filter(|t| t.kind == Kind::Str || t.kind == Kind::Ident)
                .collect();
            if names.len() < 2 {
                return text.to_string();
            }
            let a = *pick(rng, &names);
            let b = *pick(rng, &names);
            replace(text, a.start, a.end, &text[b.start..b.end])
        }
        // Whole lines: one repeated, dropped, or swapped for a donor's line.
        10 | 11 => {
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            let k = below(rng, lines.len());
            let mut out = String::with_capacity(text.len() * 2);
            for (i, l) in lines.iter().enumerate() {
                if i == k {
                    match below(rng, 3) {
                        0 => {
                            for _ in 0..repeat_count(rng, l.len()) {
                                out.push_str(l);
                                if !l.ends_with('\n') {
                                    out.push('\n');
                                }
                            }
                        }
                        1 => {}
                        _ => {
                            let donor = pick(rng, donors);
                            let dl: Vec<&str> = donor.split_inclusive('\n').collect();
                            if !dl.is_empty() {
                                out.push_str(pick::<&str>(rng, &dl));
                            }
                        }
                    }
                }
                out.push_str(l);
            }
            out
        }
        // A value replaced by another of the same kind (any number into any number slot).
        12 => {
            let same: Vec<&Tok> = toks.iter().filter(|t| t.kind == Kind::Num).collect();
            if same.len() < 2 {
                return text.to_string();
            }
            let a = *pick(rng, &same);
            let b = *pick(rng, &same);
            replace(text, a.start, a.end, &text[b.start..b.end])
        }
        // Nasty text inserted (inside strings or anywhere).
        _ => {
            let k = *pick(rng, &toks);
            let at = if k.kind == Kind::Str && k.end - k.start >= 2 {
                k.start + 1
            } else {
                k.start
            };
            let mut at = at.min(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            replace(text, at, at, pick::<&str>(rng, NASTY))
        }
    }
}

/// One to four mutations (one or two when structural), and a cap on size (a file beyond the loader's limit is refused
/// before parsing; the cap keeps the cost of one input small).
pub fn mutate(
    rng: &mut ChaCha8Rng,
    text: &str,
    donors: &[String],
    style: Style,
    max_len: usize,
) -> String {
    let mut s = text.to_string();
    // Structural inputs are to load: fewer mutations at once keep more of them valid.
    let n = match style {
        Style::Any => 1 + below(rng, 4),
        Style::Structural => 1 + below(rng, 2),
    };
    for _ in 0..n {
        let next = mutate_once(rng, &s, donors, style);
        if next.len() <= max_len {
            s = next;
        }
    }
    s
}
