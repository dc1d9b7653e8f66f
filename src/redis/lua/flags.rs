//! Script flags (Redis 7.0's `scripts_flags_def`): the ones a `#!lua flags=...` shebang
//! declares for EVAL, and the ones `redis.register_function` gives a function, read by one
//! table. A leaf of `lua`.

/// The script flags in Redis 7.0's `scripts_flags_def` order: what a `#!lua flags=...`
/// shebang and `redis.register_function`'s `flags` accept, and the order FUNCTION LIST
/// names them in.
pub(crate) const SCRIPT_FLAG_NAMES: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// The flags a script declares in its `#!lua flags=...` shebang. A script without a shebang
/// has none of these: it runs in Redis 7.0's "eval compat mode", where only what it calls
/// decides (a flagless `#!lua` script, by contrast, is taken as one that may write).
/// The same flags are a function's (`redis.register_function`'s `flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    /// `no-writes`: every write (and PUBLISH) inside is refused; runs on replicas and by `*_RO`.
    pub no_writes: bool,
    /// `allow-stale`: parsed for its text only (the model has no `replica-serve-stale-data no`).
    pub allow_stale: bool,
    /// `allow-oom`, `no-cluster`, `allow-cross-slot-keys`: the model has no maxmemory
    /// policy and no cluster, so they change nothing but FUNCTION LIST's flags.
    pub allow_oom: bool,
    pub no_cluster: bool,
    pub allow_cross_slot_keys: bool,
}

impl ScriptFlags {
    /// Sets the flag named `name` (`ignore_case`: as `register_function` compares, with
    /// strcasecmp; a shebang compares exactly). False for a name that is no flag.
    pub fn set(&mut self, name: &[u8], ignore_case: bool) -> bool {
        let Some(i) = SCRIPT_FLAG_NAMES.iter().position(|f| {
            if ignore_case {
                f.as_bytes().eq_ignore_ascii_case(name)
            } else {
                f.as_bytes() == name
            }
        }) else {
            return false;
        };
        *self.slot(i) = true;
        true
    }

    fn slot(&mut self, i: usize) -> &mut bool {
        match i {
            0 => &mut self.no_writes,
            1 => &mut self.allow_oom,
            2 => &mut self.allow_stale,
            3 => &mut self.no_cluster,
            _ => &mut self.allow_cross_slot_keys,
        }
    }

    /// The names of the flags set, in `scripts_flags_def` order (FUNCTION LIST's).
    pub fn names(&self) -> Vec<&'static str> {
        let set = [
            self.no_writes,
            self.allow_oom,
            self.allow_stale,
            self.no_cluster,
            self.allow_cross_slot_keys,
        ];
        SCRIPT_FLAG_NAMES
            .iter()
            .zip(set)
            .filter_map(|(name, on)| on.then_some(*name))
            .collect()
    }
}

/// Reads the shebang of `source`: `Ok(None)` when there is none (eval compat mode),
/// `Ok(Some(flags))` for a valid `#!lua` line, or Redis 7.0's error text for a bad one.
pub fn shebang_flags(source: &[u8]) -> Result<Option<ScriptFlags>, String> {
    Ok(parse_shebang(source)?.map(|(flags, _)| flags))
}

/// Validates and removes a `#!lua ...` first line, keeping its line feed so that line
/// numbers stay those of the script as written.
pub(crate) fn strip_shebang(source: &[u8]) -> Result<&[u8], String> {
    Ok(match parse_shebang(source)? {
        None => source,
        Some((_, end)) => &source[end..],
    })
}

/// Redis 7.0's `evalExtractShebangFlags`: the flags and the offset of the line feed that ends
/// the shebang. Several `flags=` options are allowed and add up, as in Redis.
fn parse_shebang(source: &[u8]) -> Result<Option<(ScriptFlags, usize)>, String> {
    if !source.starts_with(b"#!") {
        return Ok(None);
    }
    let Some(end) = source.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid script shebang".to_string());
    };
    let line = String::from_utf8_lossy(&source[..end]);
    let mut parts = line.split_ascii_whitespace();
    let Some(engine) = parts.next() else {
        return Err("ERR Invalid engine in script shebang".to_string());
    };
    if engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut declared = ScriptFlags::default();
    for part in parts {
        let Some(flags) = part.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {part}"));
        };
        for flag in flags.split(',').filter(|f| !f.is_empty()) {
            if !declared.set(flag.as_bytes(), false) {
                return Err(format!("ERR Unexpected flag in script shebang: {flag}"));
            }
        }
    }
    Ok(Some((declared, end)))
}
