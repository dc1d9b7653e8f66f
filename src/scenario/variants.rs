//! A model's variants: `variants: [(name: "compare-and-delete", clients: [(name: "c",
//! algorithm: "set-px-cad")])]` — the same model with a few fields changed, so that a page
//! can show the fix on the same seed (the same faults and network draws) beside the pitfall.
//!
//! A variant is written in the model's own words: top-level fields replace the model's;
//! `clients` lists patches of client groups, found by `name`, whose fields replace (or are
//! added to) that group's. The variant's model is the model's text with those values spliced
//! in and the `variants` field left out, read by the same loader — so a variant means
//! exactly what the same edit to the file would mean, and its errors are the loader's,
//! located back at the variant's text.

use crate::scenario::marks::skip_ws;

/// One variant: its name and the model text it stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    pub name: String,
    /// One sentence a page says beside the variant's run (`note: "..."`): why it still
    /// fails, why it parts from the model's run before any fault, or that nothing on the
    /// Redis side fixes the pitfall and this is the nearest safe setup.
    pub note: Option<String>,
    /// The model's text with the variant's fields spliced in (and no `variants`).
    pub text: String,
    /// Byte offset of the variant's name in the model file (where its errors point).
    pub name_at: usize,
    /// Spliced values: (start in `text`, end in `text`, start in the model file).
    pub spliced: Vec<(usize, usize, usize)>,
}

/// The top-level fields of a model (`Model`), which a variant may replace.
const MODEL_FIELDS: &[&str] = &[
    "description",
    "duration",
    "max_events",
    "epoch_unix_ms",
    "nodes",
    "resource",
    "clients",
    "sentinels",
    "consensus",
    "network",
    "faults",
    "random_faults",
    "triggers",
    "swarm",
    "check",
    "liveness_bound",
    "release_within",
    "expect",
    "witness",
];

/// At most this many variants in one model (each is a run on every page).
pub const MAX_VARIANTS: usize = 8;

/// A field of a RON struct: its name and where its name and value are.
#[derive(Clone, Debug)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) name_at: usize,
    pub(crate) value_at: usize,
    pub(crate) value_end: usize,
}

/// An error at a byte offset of the model file.
pub type Located = (usize, String);

/// End of the string literal starting at `i` (`"…"` or a raw `r#"…"#`).
fn string_end(b: &[u8], mut i: usize) -> Result<usize, Located> {
    let start = i;
    if b[i] == b'r' {
        i += 1;
        let mut hashes = 0;
        while i < b.len() && b[i] == b'#' {
            hashes += 1;
            i += 1;
        }
        i += 1; // the quote
        while i < b.len() {
            if b[i] == b'"'
                && b[i + 1..]
                    .iter()
                    .take(hashes)
                    .filter(|&&c| c == b'#')
                    .count()
                    == hashes
            {
                return Ok(i + 1 + hashes);
            }
            i += 1;
        }
        return Err((start, "unterminated raw string".into()));
    }
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Ok(i + 1),
            _ => i += 1,
        }
    }
    Err((start, "unterminated string".into()))
}

/// End of the char literal at `i` (`'x'`, `'é'`, `'\n'`, `'\u{e9}'`, `'\''`): a char is
/// one to four bytes of UTF-8 (counting one byte for `'é'` ran past its closing quote, which
/// then opened a literal that swallowed the `]` after it: "unclosed '['"). A quote that
/// opens no literal is passed over by itself, for the model's parser to place.
fn char_end(b: &[u8], i: usize) -> usize {
    let Some(&first) = b.get(i + 1) else {
        return i + 1;
    };
    if first == b'\\' {
        // An escape: up to the next quote after the escaped character (`'\''` included).
        return b
            .get(i + 3..)
            .and_then(|rest| rest.iter().take(12).position(|&c| c == b'\''))
            .map_or(i + 1, |k| i + 3 + k + 1);
    }
    let width = match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    };
    if b.get(i + 1 + width) == Some(&b'\'') {
        i + 2 + width
    } else {
        i + 1
    }
}

/// End of the bracketed group opening at `i`.
fn group_end(b: &[u8], i: usize) -> Result<usize, Located> {
    let mut stack = vec![b[i]];
    let mut j = i + 1;
    while j < b.len() {
        j = skip_ws(b, j);
        if j >= b.len() {
            break;
        }
        match b[j] {
            b'"' => j = string_end(b, j)?,
            b'r' if b.get(j + 1).is_some_and(|c| *c == b'"' || *c == b'#') => j = string_end(b, j)?,
            b'\'' => j = char_end(b, j),
            c @ (b'(' | b'[' | b'{') => {
                stack.push(c);
                j += 1;
            }
            c @ (b')' | b']' | b'}') => {
                let open = stack.pop().unwrap_or(b'?');
                let want = match open {
                    b'(' => b')',
                    b'[' => b']',
                    _ => b'}',
                };
                if c != want {
                    return Err((j, format!("unbalanced '{}'", c as char)));
                }
                j += 1;
                if stack.is_empty() {
                    return Ok(j);
                }
            }
            _ => j += 1,
        }
    }
    Err((i, format!("unclosed '{}'", b[i] as char)))
}

/// End of the value starting at `i` (a literal, a group, or `name(…)` / `name`).
pub(crate) fn value_end(b: &[u8], i: usize) -> Result<usize, Located> {
    match b.get(i) {
        None => Err((i, "a value was expected".into())),
        Some(b'"') => string_end(b, i),
        Some(b'r') if b.get(i + 1).is_some_and(|c| *c == b'"' || *c == b'#') => string_end(b, i),
        Some(b'(' | b'[' | b'{') => group_end(b, i),
        Some(_) => {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b"_.+-".contains(&b[j])) {
                j += 1;
            }
            if j == i {
                return Err((i, "a value was expected".into()));
            }
            let k = skip_ws(b, j);
            if b.get(k) == Some(&b'(') {
                return group_end(b, k);
            }
            Ok(j)
        }
    }
}

/// The fields of the struct whose `(` is at `open`, and where its `)` is.
pub(crate) fn fields(b: &[u8], open: usize) -> Result<(Vec<Field>, usize), Located> {
    let mut out = Vec::new();
    let mut i = skip_ws(b, open + 1);
    loop {
        match b.get(i) {
            Some(b')') => return Ok((out, i)),
            None => return Err((open, "unclosed '('".into())),
            _ => {}
        }
        let name_at = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        if i == name_at {
            return Err((i, "a field name was expected".into()));
        }
        let name = String::from_utf8_lossy(&b[name_at..i]).into_owned();
        i = skip_ws(b, i);
        if b.get(i) != Some(&b':') {
            return Err((i, format!("':' was expected after field {name}")));
        }
        let value_at = skip_ws(b, i + 1);
        let value_end = value_end(b, value_at)?;
        out.push(Field {
            name,
            name_at,
            value_at,
            value_end,
        });
        i = skip_ws(b, value_end);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
    }
}

/// The items of the list whose `[` is at `open`.
pub(crate) fn items(b: &[u8], open: usize) -> Result<Vec<(usize, usize)>, Located> {
    let mut out = Vec::new();
    let mut i = skip_ws(b, open + 1);
    loop {
        match b.get(i) {
            Some(b']') => return Ok(out),
            None => return Err((open, "unclosed '['".into())),
            _ => {}
        }
        let end = value_end(b, i)?;
        out.push((i, end));
        i = skip_ws(b, end);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
    }
}

/// The text of a plain string literal (no escapes needed for names).
pub(crate) fn string_value(text: &str, f: &Field) -> Option<String> {
    let v = &text[f.value_at..f.value_end];
    let inner = v.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then(|| inner.to_string())
}

/// One splice: replace `start..end` of the model file with `insert` and then the model
/// file's `src_start..src_end` (a value of the variant).
struct Edit {
    start: usize,
    end: usize,
    prefix: String,
    src: (usize, usize),
    suffix: String,
    /// For an added field: where its name is in the model file (its name ends `prefix`,
    /// before the ": ").
    name_src: Option<usize>,
}

/// An edit that sets field `f` (from the variant) in the struct with fields `fs` closing at
/// `close`: over the old value, or added at the end.
fn set_field(b: &[u8], fs: &[Field], close: usize, f: &Field, open: usize) -> Edit {
    let (start, end, prefix, suffix) = field_slot(b, fs, close, open, &f.name);
    Edit {
        start,
        end,
        src: (f.value_at, f.value_end),
        name_src: (!prefix.is_empty()).then_some(f.name_at),
        prefix,
        suffix,
    }
}

/// Where a value of field `name` goes in the struct whose `(` is at `open`, with fields `fs`
/// and `)` at `close`: `(start, end, prefix, suffix)`, so that replacing `start..end` with
/// `prefix + value + suffix` sets the field — over its old value, or added after the last
/// field (with a comma of its own if that field has none).
pub(crate) fn field_slot(
    b: &[u8],
    fs: &[Field],
    close: usize,
    open: usize,
    name: &str,
) -> (usize, usize, String, String) {
    if let Some(old) = fs.iter().find(|g| g.name == name) {
        return (old.value_at, old.value_end, String::new(), String::new());
    }
    let (at, comma) = match fs.last() {
        None => (open + 1, false),
        Some(last) => {
            let after = skip_ws(b, last.value_end);
            if b.get(after) == Some(&b',') {
                (close, false)
            } else {
                (last.value_end, true)
            }
        }
    };
    (
        at,
        at,
        format!("{} {name}: ", if comma { "," } else { "" }),
        if comma || fs.is_empty() {
            String::new()
        } else {
            ",".into()
        },
    )
}

/// The variants a model's text declares, each as the model text it stands for. Errors are
/// at byte offsets of `text`.
pub fn parse(text: &str) -> Result<Vec<Variant>, Located> {
    let b = text.as_bytes();
    let open = skip_ws(b, 0);
    if b.get(open) != Some(&b'(') {
        return Ok(Vec::new()); // the loader says what is wrong with it
    }
    let (top, top_close) = fields(b, open)?;
    let Some(vf) = top.iter().find(|f| f.name == "variants") else {
        return Ok(Vec::new());
    };
    if b.get(vf.value_at) != Some(&b'[') {
        return Err((
            vf.value_at,
            "variants: a list of (name: \"...\", <changed fields>) was expected".into(),
        ));
    }
    // Leaving `variants` out: from its name to the next field (or the closing paren).
    let vi = top.iter().position(|f| f.name == "variants").unwrap_or(0);
    let cut_end = top.get(vi + 1).map_or(top_close, |n| n.name_at);
    let cut = Edit {
        start: vf.name_at,
        end: cut_end,
        prefix: String::new(),
        src: (0, 0),
        suffix: String::new(),
        name_src: None,
    };
    let clients = top.iter().find(|f| f.name == "clients");
    let mut out: Vec<Variant> = Vec::new();
    let list = items(b, vf.value_at)?;
    if list.len() > MAX_VARIANTS {
        return Err((
            vf.value_at,
            format!("variants: at most {MAX_VARIANTS} (found {})", list.len()),
        ));
    }
    for (start, _) in list {
        if b.get(start) != Some(&b'(') {
            return Err((
                start,
                "a variant is (name: \"...\", <changed fields>)".into(),
            ));
        }
        let (vfs, _) = fields(b, start)?;
        let Some(nf) = vfs.iter().find(|f| f.name == "name") else {
            return Err((
                start,
                "this variant has no name: (name: \"...\", <changed fields>)".into(),
            ));
        };
        let Some(name) = string_value(text, nf).filter(|n| !n.is_empty() && n.len() <= 64) else {
            return Err((
                nf.value_at,
                "a variant's name is a non-empty string of at most 64 characters".into(),
            ));
        };
        if name == "as written" || out.iter().any(|v| v.name == name) {
            return Err((
                nf.value_at,
                format!(
                    "variant {name:?} is named twice (or takes the name of the model as written)"
                ),
            ));
        }
        let note = match vfs.iter().find(|f| f.name == "note") {
            None => None,
            Some(f) => Some(note_value(text, f, &name)?),
        };
        let mut edits = vec![Edit { ..cut_clone(&cut) }];
        for f in vfs.iter().filter(|f| f.name != "name" && f.name != "note") {
            if vfs.iter().filter(|g| g.name == f.name).count() > 1 {
                return Err((f.name_at, format!("variant {name:?} sets {} twice", f.name)));
            }
            if f.name == "clients" {
                let Some(cf) = clients else {
                    return Err((f.name_at, "the model has no clients to change".into()));
                };
                let groups = items(b, cf.value_at)?;
                if b.get(f.value_at) != Some(&b'[') {
                    return Err((
                        f.value_at,
                        "clients in a variant: a list of (name: \"<group>\", <changed fields>)"
                            .into(),
                    ));
                }
                for (ps, _) in items(b, f.value_at)? {
                    if b.get(ps) != Some(&b'(') {
                        return Err((
                            ps,
                            "a client patch is (name: \"<group>\", <changed fields>)".into(),
                        ));
                    }
                    let (pfs, _) = fields(b, ps)?;
                    let Some(pn) = pfs
                        .iter()
                        .find(|g| g.name == "name")
                        .and_then(|g| string_value(text, g).map(|s| (s, g)))
                    else {
                        return Err((
                            ps,
                            "a client patch names the group it changes: (name: \"<group>\", ...)"
                                .into(),
                        ));
                    };
                    let mut found = None;
                    let mut known = Vec::new();
                    for &(gs, _) in &groups {
                        if b.get(gs) != Some(&b'(') {
                            continue;
                        }
                        let (gfs, gclose) = fields(b, gs)?;
                        let gname = gfs
                            .iter()
                            .find(|g| g.name == "name")
                            .and_then(|g| string_value(text, g));
                        if gname.as_deref() == Some(pn.0.as_str()) {
                            found = Some((gs, gfs, gclose));
                            break;
                        }
                        known.extend(gname);
                    }
                    let Some((gs, gfs, gclose)) = found else {
                        return Err((
                            pn.1.value_at,
                            format!(
                                "variant {name:?}: no client group named {:?} (groups: {})",
                                pn.0,
                                known.join(", ")
                            ),
                        ));
                    };
                    for pf in pfs.iter().filter(|g| g.name != "name") {
                        if pf.name == "remove" {
                            edits.extend(removals(text, pf, &gfs, &name, &pn.0)?);
                        } else {
                            edits.push(set_field(b, &gfs, gclose, pf, gs));
                        }
                    }
                }
            } else if MODEL_FIELDS.contains(&f.name.as_str()) {
                edits.push(set_field(b, &top, top_close, f, open));
            } else {
                return Err((
                    f.name_at,
                    format!(
                        "unknown field {:?} in variant {name:?}; a variant has a name, may have a note, and changes fields of the model: {}",
                        f.name,
                        MODEL_FIELDS.join(", ")
                    ),
                ));
            }
        }
        // Apply in order of position (edits never overlap: each is in its own field).
        edits.sort_by_key(|e| (e.start, e.end));
        let mut t = String::with_capacity(text.len() + 256);
        let mut spliced = Vec::new();
        let mut last = 0;
        for e in &edits {
            if e.start < last {
                return Err((e.start, format!("variant {name:?} changes one place twice")));
            }
            t.push_str(&text[last..e.start]);
            t.push_str(&e.prefix);
            if let Some(n) = e.name_src {
                // "…name: " — the name is what precedes the ": ".
                let name_len = e.prefix.trim_end().trim_end_matches(':').len();
                let start = t.len() - e.prefix.len() + name_len;
                let nlen = e
                    .prefix
                    .trim_end()
                    .trim_end_matches(':')
                    .rsplit(' ')
                    .next()
                    .map_or(0, str::len);
                spliced.push((start - nlen, start, n));
            }
            let s0 = t.len();
            t.push_str(&text[e.src.0..e.src.1]);
            if e.src.1 > e.src.0 {
                spliced.push((s0, t.len(), e.src.0));
            }
            t.push_str(&e.suffix);
            last = e.end;
        }
        t.push_str(&text[last..]);
        out.push(Variant {
            name,
            note,
            text: t,
            name_at: nf.value_at,
            spliced,
        });
    }
    Ok(out)
}

/// A client patch's `remove: ["node", "via_sentinels"]`: edits that cut those fields out of
/// the group (with the comma after each), so that a variant can give a group another
/// algorithm that does not read them.
fn removals(
    text: &str,
    f: &Field,
    group: &[Field],
    variant: &str,
    name: &str,
) -> Result<Vec<Edit>, Located> {
    let b = text.as_bytes();
    let bad = |at: usize, why: String| (at, format!("variant {variant:?}: {why}"));
    let names: Vec<String> = ron::from_str(&text[f.value_at..f.value_end]).map_err(|_| {
        bad(
            f.value_at,
            "remove is a list of field names: remove: [\"node\"]".into(),
        )
    })?;
    let mut out = Vec::new();
    for n in names {
        let Some(g) = group.iter().find(|g| g.name == n) else {
            return Err(bad(
                f.value_at,
                format!("client group {name:?} has no field {n:?} to remove"),
            ));
        };
        let mut end = skip_ws(b, g.value_end);
        if b.get(end) == Some(&b',') {
            end = skip_ws(b, end + 1);
        }
        out.push(Edit {
            start: g.name_at,
            end,
            prefix: String::new(),
            src: (0, 0),
            suffix: String::new(),
            name_src: None,
        });
    }
    Ok(out)
}

/// Longest `note` a variant may carry (one sentence, not an essay).
pub const MAX_NOTE_CHARS: usize = 600;

/// A variant's `note`: a RON string of at most `MAX_NOTE_CHARS` characters.
fn note_value(text: &str, f: &Field, name: &str) -> Result<String, Located> {
    let bad = |why: &str| (f.value_at, format!("variant {name:?}: note {why}"));
    let v: String = ron::from_str(&text[f.value_at..f.value_end])
        .map_err(|_| bad("is a string: note: \"...\""))?;
    if v.trim().is_empty() || v.chars().count() > MAX_NOTE_CHARS {
        return Err(bad(&format!(
            "is one sentence, of 1 to {MAX_NOTE_CHARS} characters"
        )));
    }
    Ok(v)
}

fn cut_clone(e: &Edit) -> Edit {
    Edit {
        start: e.start,
        end: e.end,
        prefix: e.prefix.clone(),
        src: e.src,
        suffix: e.suffix.clone(),
        name_src: e.name_src,
    }
}

/// Byte offset of 1-based (line, col in characters) in `text`.
pub fn offset_of(text: &str, line: usize, col: usize) -> usize {
    let mut off = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return off
                + l.char_indices()
                    .nth(col.saturating_sub(1))
                    .map_or(l.len(), |(b, _)| b);
        }
        off += l.len();
    }
    text.len()
}

/// 1-based (line, col in characters) of byte offset `off` in `text`.
pub fn line_col(text: &str, off: usize) -> (usize, usize) {
    let off = off.min(text.len());
    let before = &text[..off];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

impl Variant {
    /// Where in the model file a position of the variant's text comes from: inside a
    /// spliced value, the same place in the variant; elsewhere, the variant's name.
    pub fn source_offset(&self, off: usize) -> usize {
        self.spliced
            .iter()
            .find(|(s, e, _)| off >= *s && off < *e)
            .map_or(self.name_at, |(s, _, src)| src + (off - s))
    }
}

/// `text` with `faults` (RON fault entries, e.g. `pause(target: "c1", at: "43200ms",
/// duration: "5000ms")`) added to its scripted faults, and without its variants: the model
/// of a "what if" (`serve`).
pub fn with_added_faults(text: &str, faults: &[String]) -> Result<String, Located> {
    let b = text.as_bytes();
    let open = skip_ws(b, 0);
    if b.get(open) != Some(&b'(') {
        return Err((open, "a model is a RON struct: ( ... )".into()));
    }
    let (top, close) = fields(b, open)?;
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    if let Some(i) = top.iter().position(|f| f.name == "variants") {
        let end = top.get(i + 1).map_or(close, |n| n.name_at);
        edits.push((top[i].name_at, end, String::new()));
    }
    let added = faults.join(", ");
    match top.iter().find(|f| f.name == "faults") {
        Some(f) if b.get(f.value_at) == Some(&b'[') => {
            let list = items(b, f.value_at)?;
            let at = f.value_end - 1; // the `]`
            let sep = if list.is_empty() { "" } else { ", " };
            // After the last item (a trailing comma of its own is fine before ours).
            let at = list.last().map_or(at, |l| l.1);
            edits.push((at, at, format!("{sep}{added}")));
        }
        Some(f) => return Err((f.value_at, "faults: a list was expected".into())),
        None => {
            let last = top
                .iter()
                .rfind(|f| f.name != "variants")
                .map_or(open + 1, |l| l.value_end);
            edits.push((last, last, format!(", faults: [{added}]")));
        }
    }
    edits.sort_by_key(|e| e.0);
    let mut out = String::with_capacity(text.len() + added.len() + 16);
    let mut pos = 0;
    for (s, e, ins) in edits {
        out.push_str(&text[pos..s]);
        out.push_str(&ins);
        pos = e;
    }
    out.push_str(&text[pos..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = r#"// a comment (with a paren
(
    description: "d",
    duration: "60s",
    nodes: [(name: "redis")],
    clients: [(
        name: "c", count: 3, algorithm: "set-px-del", node: "redis",
        ttl: "10s", hold: ("1s", "3s"),
    )],
    check: ["mutual_exclusion"],
    variants: [
        (name: "cad", clients: [(name: "c", algorithm: "set-px-cad", think: ("0ms", "5ms"))]),
        (name: "fenced", resource: (name: "db", fencing: true)),
    ],
)
"#;

    #[test]
    fn a_variant_is_the_model_with_its_fields_spliced_in_and_no_variants() {
        let vs = parse(MODEL).unwrap();
        assert_eq!(vs.len(), 2);
        assert_eq!(vs[0].name, "cad");
        assert!(
            vs[0].text.contains(r#"algorithm: "set-px-cad""#),
            "{}",
            vs[0].text
        );
        assert!(
            vs[0].text.contains(r#"think: ("0ms", "5ms")"#),
            "{}",
            vs[0].text
        );
        assert!(!vs[0].text.contains("variants"), "{}", vs[0].text);
        assert!(!vs[0].text.contains("set-px-del"));
        assert!(
            vs[1]
                .text
                .contains(r#"resource: (name: "db", fencing: true)"#),
            "{}",
            vs[1].text
        );
        assert!(vs[1].text.contains("set-px-del"));
    }

    #[test]
    fn a_variant_naming_an_unknown_field_or_group_is_an_error_at_that_field() {
        let bad = MODEL.replace("resource: (name", "resourse: (name");
        let (at, msg) = parse(&bad).unwrap_err();
        assert!(msg.contains("unknown field \"resourse\""), "{msg}");
        assert_eq!(&bad[at..at + 8], "resourse");
        let bad = MODEL.replace(r#"(name: "c", algorithm"#, r#"(name: "x", algorithm"#);
        let (at, msg) = parse(&bad).unwrap_err();
        assert!(msg.contains("no client group named \"x\""), "{msg}");
        assert_eq!(&bad[at..at + 3], "\"x\"");
    }

    #[test]
    fn char_literals_of_any_width_or_escape_end_at_their_closing_quote() {
        let text = r"['é', 'x', '\n', '\'', '\u{e9}', '€', '😀'] tail";
        let close = text.find(']').unwrap();
        assert_eq!(group_end(text.as_bytes(), 0), Ok(close + 1));
        // A lone quote opens nothing: the group still closes where it does.
        assert_eq!(group_end(b"[a ' b]", 0), Ok(7));
    }

    #[test]
    fn a_note_is_kept_apart_and_a_removed_field_is_cut_from_its_group() {
        let m = MODEL.replace(
            r#"(name: "fenced", resource: (name: "db", fencing: true)),"#,
            r#"(name: "fenced", note: "a \"quoted\" note", clients: [(name: "c", remove: ["hold", "ttl"])]),"#,
        );
        let vs = parse(&m).unwrap();
        assert_eq!(vs[0].note, None);
        assert_eq!(vs[1].note.as_deref(), Some(r#"a "quoted" note"#));
        assert!(!vs[1].text.contains("note"), "{}", vs[1].text);
        assert!(!vs[1].text.contains("hold:"), "{}", vs[1].text);
        assert!(!vs[1].text.contains("ttl:"), "{}", vs[1].text);
        assert!(vs[1].text.contains(r#"node: "redis""#), "{}", vs[1].text);
        // A field the group lacks, a note that is no string or is empty: errors there.
        for bad in [
            r#"clients: [(name: "c", remove: ["nope"])]"#,
            r#"note: 3"#,
            r#"note: """#,
        ] {
            let m = MODEL.replace(r#"resource: (name: "db", fencing: true)"#, bad);
            let (at, why) = parse(&m).unwrap_err();
            assert!(
                why.contains("note") || why.contains("has no field \"nope\""),
                "{bad}: {why}"
            );
            assert!(
                m[..at].contains(r#"name: "fenced""#),
                "{bad}: located at {at}"
            );
        }
    }

    #[test]
    fn a_model_without_variants_has_none() {
        let plain = MODEL.split("    variants").next().unwrap().to_string() + ")\n";
        assert_eq!(parse(&plain).unwrap(), Vec::new());
    }
}
