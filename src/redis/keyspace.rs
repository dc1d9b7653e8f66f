//! One Redis database: keys, values and absolute expiries on the node's wall clock.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use rustc_hash::FxBuildHasher;

use crate::proto::Bytes;
use crate::proto::bytes::{KeyRef, bytes_eq};

/// A stored value. Lists exist only so that WRONGTYPE can be reproduced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Str(Bytes),
    List(Vec<Bytes>),
    /// A hash as Redis 7.0 keeps a small one (a listpack): fields in insertion order, a
    /// deleted field leaves the others in order, so HGETALL answers in the server's order.
    /// Lock hashes hold one or two fields, so the linear search costs nothing.
    // Invariant: field names are unique, and the vector is never empty while stored (the
    // last HDEL deletes the key).
    Hash(Vec<(Bytes, Bytes)>),
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
        }
    }
    /// The bytes a lock checker cares about (a list has none). A cheap shared clone. A hash
    /// gives its first field's name: a Redisson lock hash holds one field, the holder's
    /// `uuid:threadId`, which plays the token's part.
    #[inline]
    pub fn shared_bytes(&self) -> Bytes {
        match self {
            Value::Str(b) => b.clone(),
            Value::List(_) => Bytes::new(),
            Value::Hash(fields) => fields.first().map(|(f, _)| f.clone()).unwrap_or_default(),
        }
    }
}

impl Value {
    /// What the value weighs for the memory cap: its bytes, and [`ELEMENT_OVERHEAD_BYTES`]
    /// for each list item or hash field.
    pub fn weight_bytes(&self) -> u64 {
        let len = |b: &Bytes| b.len() as u64;
        match self {
            Value::Str(b) => len(b),
            Value::List(items) => items.iter().map(|b| ELEMENT_OVERHEAD_BYTES + len(b)).sum(),
            Value::Hash(fields) => fields
                .iter()
                .map(|(f, v)| ELEMENT_OVERHEAD_BYTES + len(f) + len(v))
                .sum(),
        }
    }
}

/// What one key costs beyond its bytes (the map's slot, the entry, a deadline), roughly as
/// the simulator allocates it: so that a million empty keys count, not only long values.
pub const ENTRY_OVERHEAD_BYTES: u64 = 64;
/// What one list item or hash field costs beyond its bytes.
pub const ELEMENT_OVERHEAD_BYTES: u64 = 16;

/// The weight of one key and its entry for the memory cap.
pub fn entry_weight_bytes(key: &[u8], e: &Entry) -> u64 {
    ENTRY_OVERHEAD_BYTES + key.len() as u64 + e.value.weight_bytes()
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub value: Value,
    /// Absolute Unix ms on the node's wall clock; `None`: no TTL.
    pub expire_at_ms: Option<i64>,
}

impl Entry {
    /// Lazy-expiry rule: a key is expired when `now > expire_at` (Redis `keyIsExpired`).
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.expire_at_ms.is_some_and(|t| now_ms > t)
    }
}

/// The keyspace. IndexMap with a fixed hasher: iteration order is insertion order (with
/// swap-removal), the same on every machine and every run.
#[derive(Clone, Debug)]
pub struct Keyspace {
    map: IndexMap<Bytes, Entry, FxBuildHasher>,
    /// The entries' deadlines, while known: kept up to date by the writes that go through
    /// here, forgotten when an entry is lent out mutably (`at_mut`, `raw_mut`), and counted
    /// again when next asked. A sleeping cron asks after every event at its node; without
    /// this, each event cost a pass over the whole keyspace.
    // Invariant: if Some(s), s == ExpirySummary::of(map).
    expiry: Option<ExpirySummary>,
    /// The keyspace's weight for the node's memory cap (`RedisNode::used_memory`): kept by
    /// the writes that go through here, and by `resized` from a command that changed a
    /// value it was lent (`at_mut`, `value_at_mut`, `raw_mut`). Never weighed again: a
    /// recount at each write after a lend was quadratic in a script's loop of HSETs.
    // Invariant: used == weigh() (the sum of entry_weight_bytes over map).
    used: u64,
    /// Encodings a stored value keeps that its contents no longer show (OBJECT ENCODING):
    /// a string APPEND or SETRANGE made `raw`, a hash converted to a `hashtable`. They go
    /// with the entry: any write that replaces or removes it drops them. Empty unless such
    /// commands ran, so the lock commands pay one emptiness check.
    // Invariant: every key in it is a key of `map`.
    sticky: BTreeMap<Bytes, Sticky>,
}

/// An encoding Redis 7.0.15 keeps for a value until it is replaced (`Keyspace::sticky`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sticky {
    /// A string made `raw` by APPEND or SETRANGE (`dbUnshareStringValue`), whatever it holds.
    RawString,
    /// A hash converted to a dict (a field or value over 64 bytes, over 512 fields): it is
    /// never converted back while it lives.
    Hashtable,
}

/// `hash-max-listpack-entries` as a Redis 7.0.15 started without a config file has it
/// (`CONFIG GET` answers 512; the redis.conf shipped beside it says 128).
pub const HASH_MAX_LISTPACK_ENTRIES: usize = 512;
/// `hash-max-listpack-value`.
pub const HASH_MAX_LISTPACK_VALUE: usize = 64;
/// OBJ_ENCODING_EMBSTR_SIZE_LIMIT (object.c).
const EMBSTR_SIZE_LIMIT: usize = 44;

/// OBJECT ENCODING of a value as Redis 7.0.15 stores it: a string as `tryObjectEncoding`
/// leaves what SET, INCR, APPEND to a new key, a full sync and a reload store (`int` for
/// a canonical integer of at most 20 bytes, `embstr` up to 44 bytes, else `raw`) unless
/// made `raw`; a list is always a `quicklist` in 7.0; a hash a `listpack` until converted.
pub fn encoding_name(value: &Value, sticky: Option<Sticky>) -> &'static str {
    match value {
        Value::Str(_) if sticky == Some(Sticky::RawString) => "raw",
        Value::Str(v) if v.len() <= 20 && crate::proto::command::parse_i64_strict(v).is_some() => {
            "int"
        }
        Value::Str(v) if v.len() <= EMBSTR_SIZE_LIMIT => "embstr",
        Value::Str(_) => "raw",
        Value::List(_) => "quicklist",
        Value::Hash(_) if sticky == Some(Sticky::Hashtable) => "hashtable",
        Value::Hash(_) => "listpack",
    }
}

impl Default for Keyspace {
    fn default() -> Self {
        Keyspace {
            map: IndexMap::default(),
            expiry: Some(ExpirySummary::EMPTY),
            used: 0,
            sticky: BTreeMap::new(),
        }
    }
}

/// The deadlines of a keyspace as the cron reads them: the earliest, and how many keys have
/// one (`dictSize(db->expires)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpirySummary {
    /// The earliest deadline (`Some(None)`: no key has one); `None` once the key that held
    /// it went, until counted again. A map ordered by deadline would know it always, but
    /// costs more on every write than a recount of a lock model's few keys.
    earliest_ms: Option<Option<i64>>,
    with_ttl: u64,
}

impl ExpirySummary {
    const EMPTY: ExpirySummary = ExpirySummary {
        earliest_ms: Some(None),
        with_ttl: 0,
    };

    fn of(map: &IndexMap<Bytes, Entry, FxBuildHasher>) -> ExpirySummary {
        let mut s = ExpirySummary::EMPTY;
        for e in map.values() {
            s.add(e);
        }
        s
    }

    fn add(&mut self, e: &Entry) {
        if let Some(t) = e.expire_at_ms {
            self.with_ttl += 1;
            if let Some(earliest) = &mut self.earliest_ms {
                *earliest = Some(earliest.map_or(t, |m| m.min(t)));
            }
        }
    }

    fn remove(&mut self, e: &Entry) {
        if let Some(t) = e.expire_at_ms {
            self.with_ttl -= 1;
            // The earliest may have gone with it (another key may share it, or not).
            if self.earliest_ms.is_some_and(|m| m.is_some_and(|m| t <= m)) {
                self.earliest_ms = None;
            }
        }
    }
}

impl Keyspace {
    pub fn new() -> Keyspace {
        Keyspace::default()
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// The stored entry, expired or not (callers apply the expiry rule for their role).
    pub fn raw(&self, key: &[u8]) -> Option<&Entry> {
        self.map.get(&KeyRef(key))
    }
    /// Position of a key (one hash and probe), for a lookup followed by an access. A lock
    /// model's keyspace holds one key or none: those two cases are decided here, inline,
    /// without the call into the map (which makes the same two tests before hashing).
    #[inline(always)]
    pub fn index_of(&self, key: &[u8]) -> Option<usize> {
        match self.map.len() {
            0 => None,
            1 => {
                let (only, _) = self.map.first().expect("one entry");
                bytes_eq(key, only).then_some(0)
            }
            _ => self.map.get_index_of(&KeyRef(key)),
        }
    }
    /// `index_of` for a key held as `Bytes`, with its entry: the one-key case compares as
    /// `Bytes` do (two inline strings as fixed-size representations), and the entry comes
    /// from the same read (looked up again by position, it was checked against the length
    /// a second time).
    #[inline(always)]
    pub fn find_bytes(&self, key: &Bytes) -> Option<(usize, &Entry)> {
        match self.map.len() {
            0 => None,
            1 => {
                let (only, e) = self.map.first().expect("one entry");
                (only == key).then_some((0, e))
            }
            _ => self.map.get_full(&KeyRef(key)).map(|(i, _, e)| (i, e)),
        }
    }
    /// The key at a position.
    pub fn key_at(&self, i: usize) -> &Bytes {
        self.map.get_index(i).expect("a position in the map").0
    }
    pub fn at(&self, i: usize) -> &Entry {
        &self.map[i]
    }
    /// The entry at a position, to change at will: what is known of the deadlines is
    /// forgotten (`replace_at` and `value_at_mut` keep it).
    pub fn at_mut(&mut self, i: usize) -> &mut Entry {
        self.expiry = None;
        &mut self.map[i]
    }
    /// The value at a position, to change in place (its deadline stays).
    pub fn value_at_mut(&mut self, i: usize) -> &mut Value {
        &mut self.map[i].value
    }
    /// Puts `entry` at a position; returns the entry that was there.
    pub fn replace_at(&mut self, i: usize, entry: Entry) -> Entry {
        if !self.sticky.is_empty() {
            self.drop_sticky_at(i);
        }
        if let Some(s) = &mut self.expiry {
            s.remove(&self.map[i]);
            s.add(&entry);
        }
        self.used = self.used - self.map[i].value.weight_bytes() + entry.value.weight_bytes();
        std::mem::replace(&mut self.map[i], entry)
    }
    /// Removes the entry at a position (swap-removal, as `remove`).
    pub fn remove_at(&mut self, i: usize) -> Option<(Bytes, Entry)> {
        if !self.sticky.is_empty() {
            self.drop_sticky_at(i);
        }
        let removed = self.map.swap_remove_index(i);
        self.note_gone(removed.as_ref());
        removed
    }
    /// The entry of a key, to change at will: what is known of the deadlines is forgotten.
    pub fn raw_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.expiry = None;
        self.map.get_mut(&KeyRef(key))
    }
    pub fn insert(&mut self, key: Bytes, entry: Entry) -> Option<Entry> {
        if !self.sticky.is_empty() {
            self.sticky.remove(&key[..]);
        }
        if let Some(s) = &mut self.expiry {
            s.add(&entry);
        }
        let weight = entry_weight_bytes(&key, &entry);
        let key_len = key.len() as u64;
        let old = self.map.insert(key, entry);
        if let (Some(s), Some(e)) = (&mut self.expiry, &old) {
            s.remove(e);
        }
        // A key that was there stays (the same bytes): its old entry's weight goes.
        self.used = self.used + weight
            - old.as_ref().map_or(0, |e| {
                ENTRY_OVERHEAD_BYTES + key_len + e.value.weight_bytes()
            });
        old
    }
    /// Removes a key; returns the stored key (shared) and its entry.
    pub fn remove(&mut self, key: &[u8]) -> Option<(Bytes, Entry)> {
        if !self.sticky.is_empty() {
            self.sticky.remove(key);
        }
        let removed = self.map.swap_remove_entry(&KeyRef(key));
        self.note_gone(removed.as_ref());
        removed
    }
    pub fn clear(&mut self) {
        self.map.clear();
        self.sticky.clear();
        self.expiry = Some(ExpirySummary::EMPTY);
        self.used = 0;
    }

    #[inline(never)]
    fn drop_sticky_at(&mut self, i: usize) {
        if let Some((k, _)) = self.map.get_index(i) {
            let k = k.clone();
            self.sticky.remove(&k);
        }
    }

    /// The encoding a live key's value keeps (see `sticky`).
    pub fn sticky(&self, key: &[u8]) -> Option<Sticky> {
        self.sticky.get(key).copied()
    }

    /// Marks a stored key's value (`None`: back to what its contents say).
    pub fn set_sticky(&mut self, key: &Bytes, s: Option<Sticky>) {
        debug_assert!(s.is_none() || self.map.contains_key(&KeyRef(&key[..])));
        match s {
            Some(s) => {
                self.sticky.insert(key.clone(), s);
            }
            None => {
                self.sticky.remove(&key[..]);
            }
        }
    }

    /// OBJECT ENCODING of a stored key.
    pub fn encoding_of(&self, key: &[u8]) -> Option<&'static str> {
        let e = self.raw(key)?;
        Some(encoding_name(&e.value, self.sticky(key)))
    }

    fn note_gone(&mut self, removed: Option<&(Bytes, Entry)>) {
        if let (Some(s), Some((_, e))) = (&mut self.expiry, removed) {
            s.remove(e);
        }
        if let Some((k, e)) = removed {
            self.used -= entry_weight_bytes(k, e);
        }
    }

    /// Tells the keyspace that a value it lent out changed weight by `delta` bytes (as
    /// `Value::weight_bytes` counts: bytes, and `ELEMENT_OVERHEAD_BYTES` an item or field).
    pub fn resized(&mut self, delta: i64) {
        debug_assert!(
            self.used.checked_add_signed(delta).is_some(),
            "{} {delta}",
            self.used
        );
        self.used = self.used.saturating_add_signed(delta);
    }

    /// The keyspace's weight for the memory cap: keys, values and their overheads.
    #[inline]
    pub fn used_bytes(&self) -> u64 {
        debug_assert_eq!(self.used, self.weigh());
        self.used
    }

    /// The weight counted again from every entry (what `used_bytes` must equal).
    #[inline(never)]
    pub fn weigh(&self) -> u64 {
        self.map.iter().map(|(k, e)| entry_weight_bytes(k, e)).sum()
    }

    /// The earliest deadline of any key (expired or not), and how many keys have one:
    /// counted again only after the keyspace lent an entry out or lost its earliest key.
    // The counted case inline, the recount out of line: every event at a sleeping node
    // asks (W2: ~250,000 times), and a call returning the pair through memory cost more
    // than the two loads it needs.
    #[inline(always)]
    pub fn expiry_summary(&mut self) -> (Option<i64>, u64) {
        if let Some(
            s @ ExpirySummary {
                earliest_ms: Some(earliest),
                with_ttl,
            },
        ) = self.expiry
        {
            debug_assert_eq!(s, ExpirySummary::of(&self.map));
            return (earliest, with_ttl);
        }
        self.recount_expiry()
    }

    #[inline(never)]
    fn recount_expiry(&mut self) -> (Option<i64>, u64) {
        let s = self.expiry.insert(ExpirySummary::of(&self.map));
        (s.earliest_ms.expect("counted"), s.with_ttl)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Bytes, &Entry)> {
        self.map.iter()
    }
    /// One pass for the active expire cycle: the keys whose deadline has passed by Redis
    /// 7.0.15's rule in `activeExpireCycleTryExpire` (expire.c:56, `now > t`, the same as
    /// lazy expiry's), at most `limit` of them in keyspace order, and how many keys have a
    /// deadline at all (`dictSize(db->expires)`, which the cycle's 1 % fill stop reads).
    pub fn expiry_scan(&self, now_ms: i64, limit: usize) -> (Vec<Bytes>, u64) {
        // A plain loop: the cron asks every 100 ms, and almost always for nothing.
        let mut due = Vec::new();
        let mut with_ttl = 0u64;
        for (k, e) in &self.map {
            let Some(t) = e.expire_at_ms else { continue };
            with_ttl += 1;
            if now_ms > t && due.len() < limit {
                due.push(k.clone());
            }
        }
        (due, with_ttl)
    }
}

/// The size of one of Redis's hash tables (`db->dict` or `db->expires`) as far as the
/// active expire cycle's fill stop sees it: `dictSlots`, which counts both tables while the
/// dict is rehashing. Redis 7.0.15 grows a dict when `used >= size` on insert (to the next
/// power of two), and the cron shrinks it when `size > DICT_HT_INITIAL_SIZE` and under
/// `HASHTABLE_MIN_FILL` = 10 % full (server.c `htNeedsResize`, `tryResizeHashTables`); the
/// shrink is a rehash into a new table, finished by the cron's `incrementallyRehash`.
///
/// Growth is seen here at cron granularity (the largest size a count of keys at a cron
/// implies), not at each insert: a burst of keys added and deleted between two crons leaves
/// no trace. That is the one approximation; a burst that lasts across a cron is exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSize {
    // Invariant: slots is a power of two >= DICT_INITIAL_SLOTS.
    slots: u64,
    /// The table a shrink is rehashing into (a power of two), until the rehash finishes.
    rehash_to: Option<u64>,
}

/// DICT_HT_INITIAL_SIZE (dict.h).
pub const DICT_INITIAL_SLOTS: u64 = 4;
/// HASHTABLE_MIN_FILL (server.h): a table under 10 % full is shrunk by the cron.
const MIN_FILL_PERCENT: u64 = 10;

/// The two tables of a database whose sizes the expire cycle depends on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DbTables {
    pub keys: TableSize,
    pub expires: TableSize,
}

impl DbTables {
    /// What `databasesCron` does after the expire cycle (server.c, 7.0.15): resize both
    /// tables if needed, then give one rehash its millisecond — the keys table's if it is
    /// rehashing, else the expires table's (`incrementallyRehash` returns after the first
    /// that had work). So when both shrink at once, the expires table is still rehashing
    /// (both of its tables counted) during the next cycle, whose fill stop then leaves
    /// stragglers for the cycle after: the 200 ms-late keys of a 1,000-key batch.
    pub fn after_expire_cycle(&mut self, keys: u64, with_ttl: u64) {
        self.keys.plan_shrink(keys);
        self.expires.plan_shrink(with_ttl);
        if self.keys.is_rehashing() {
            self.keys.finish_rehash();
        } else {
            self.expires.finish_rehash();
        }
    }
}

impl Default for TableSize {
    fn default() -> Self {
        TableSize {
            slots: DICT_INITIAL_SLOTS,
            rehash_to: None,
        }
    }
}

impl TableSize {
    /// `dictSlots`: both tables while rehashing.
    pub fn slots(&self) -> u64 {
        self.slots + self.rehash_to.unwrap_or(0)
    }
    pub fn is_rehashing(&self) -> bool {
        self.rehash_to.is_some()
    }
    /// `used` entries are in the table: it has grown to hold them (`_dictExpandIfNeeded`:
    /// expand when `used >= size`, to the next power of two above `used`). While rehashing,
    /// inserts go to the new table, which grows instead.
    pub fn holds(&mut self, used: u64) {
        let need = (used.max(DICT_INITIAL_SLOTS)).next_power_of_two();
        match &mut self.rehash_to {
            Some(to) => *to = (*to).max(need),
            None => self.slots = self.slots.max(need),
        }
    }
    /// `tryResizeHashTables` → `htNeedsResize` → `dictResize`: start shrinking a table
    /// under 10 % full to the smallest power of two that holds `used` (not while rehashing:
    /// `dictResize` refuses then).
    pub fn plan_shrink(&mut self, used: u64) {
        if self.rehash_to.is_none()
            && self.slots > DICT_INITIAL_SLOTS
            && used * 100 / self.slots < MIN_FILL_PERCENT
        {
            let to = used.max(DICT_INITIAL_SLOTS).next_power_of_two();
            if to < self.slots {
                self.rehash_to = Some(to);
            }
        }
    }
    /// `incrementallyRehash` gave this table its millisecond: a small table's rehash
    /// finishes in it.
    pub fn finish_rehash(&mut self) {
        if let Some(to) = self.rehash_to.take() {
            self.slots = to;
        }
    }
}

/// Redis's glob matcher (`stringmatchlen`) for KEYS: `*`, `?`, `[...]` with ranges and `^`,
/// and `\` escapes. Iterative over `*` to stay linear-ish on hostile patterns.
pub fn glob_match(pattern: &[u8], s: &[u8]) -> bool {
    fn class_match(p: &[u8], mut i: usize, c: u8) -> Option<(bool, usize)> {
        // p[i] is just after '['. Returns (matched, index after ']').
        let negate = p.get(i) == Some(&b'^');
        if negate {
            i += 1;
        }
        let mut matched = false;
        loop {
            match p.get(i)? {
                b']' => break,
                b'\\' if i + 1 < p.len() => {
                    if p[i + 1] == c {
                        matched = true;
                    }
                    i += 2;
                }
                &lo if p.get(i + 1) == Some(&b'-') && i + 2 < p.len() && p[i + 2] != b']' => {
                    let hi = p[i + 2];
                    let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                    if (lo..=hi).contains(&c) {
                        matched = true;
                    }
                    i += 3;
                }
                &x => {
                    if x == c {
                        matched = true;
                    }
                    i += 1;
                }
            }
        }
        Some((matched != negate, i + 1))
    }
    let (mut p, mut t) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while t < s.len() {
        let step = match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
                continue;
            }
            Some(b'?') => Some(p + 1),
            Some(b'[') => match class_match(pattern, p + 1, s[t]) {
                Some((true, next)) => Some(next),
                _ => None,
            },
            Some(b'\\') if p + 1 < pattern.len() => (pattern[p + 1] == s[t]).then_some(p + 2),
            Some(&c) => (c == s[t]).then_some(p + 1),
            None => None,
        };
        match step {
            Some(next) => {
                p = next;
                t += 1;
            }
            None => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every way an entry is written, in a seeded random order over a few keys with a few
    /// deadlines (so that keys share the earliest one): the kept summary is always what a
    /// count of the whole keyspace gives; so is the kept weight for the memory cap.
    #[test]
    fn the_kept_deadline_summary_is_what_a_recount_gives_after_any_writes() {
        let mut rng = crate::rng::Seed(7).stream("keyspace-test", 0);
        let mut ks = Keyspace::new();
        for step in 0..20_000 {
            let key = Bytes::from(format!("k{}", rng.below(12)).as_str());
            let entry = Entry {
                value: Value::Str(Bytes::from("v".repeat(rng.below(40) as usize).as_str())),
                expire_at_ms: match rng.below(4) {
                    0 => None,
                    d => Some(100 + d as i64 * (rng.below(3) as i64)),
                },
            };
            match rng.below(8) {
                0 | 1 => {
                    ks.insert(key, entry);
                }
                2 => {
                    ks.remove(&key);
                }
                3 => {
                    if let Some(i) = ks.index_of(&key) {
                        ks.remove_at(i);
                    }
                }
                4 => {
                    if let Some(i) = ks.index_of(&key) {
                        ks.replace_at(i, entry);
                    }
                }
                5 => {
                    if let Some(e) = ks.raw_mut(&key) {
                        e.expire_at_ms = entry.expire_at_ms;
                    }
                }
                6 => {
                    if let Some(i) = ks.index_of(&key) {
                        ks.at_mut(i).expire_at_ms = None;
                    }
                }
                _ if step % 997 == 0 => ks.clear(),
                _ => {}
            }
            let counted = ExpirySummary::of(&ks.map);
            let kept = ks.expiry_summary();
            assert_eq!(
                kept,
                (counted.earliest_ms.expect("counted"), counted.with_ttl),
                "step {step}"
            );
            let weighed = ks.weigh();
            assert_eq!(ks.used_bytes(), weighed, "step {step}");
        }
    }

    #[test]
    fn glob_matches_like_redis() {
        assert!(glob_match(b"*", b"keep"));
        assert!(glob_match(b"k?ep", b"keep"));
        assert!(glob_match(b"lock*", b"lock2"));
        assert!(!glob_match(b"lock", b"lock2"));
        assert!(glob_match(b"h[ae]llo", b"hallo"));
        assert!(!glob_match(b"h[^e]llo", b"hello"));
        assert!(glob_match(b"h[a-b]llo", b"hbllo"));
        assert!(glob_match(b"a\\*b", b"a*b"));
        assert!(glob_match(b"*a*b*", b"xxaxxbxx"));
        assert!(!glob_match(b"[", b"x"));
    }

    #[test]
    fn active_expiry_uses_the_same_strict_rule_as_lazy_expiry() {
        let e = Entry {
            value: Value::Str(Bytes::from_slice(b"v")),
            expire_at_ms: Some(100),
        };
        assert!(!e.is_expired(100), "lazy: now > t");
        assert!(e.is_expired(101));
        let mut ks = Keyspace::new();
        ks.insert(Bytes::from_slice(b"k"), e);
        ks.insert(
            Bytes::from_slice(b"plain"),
            Entry {
                value: Value::Str(Bytes::from_slice(b"v")),
                expire_at_ms: None,
            },
        );
        // On the deadline's own millisecond the key stays (expire.c:56 `now > t`).
        assert_eq!(ks.expiry_scan(100, 10), (vec![], 1));
        assert_eq!(ks.expiry_scan(101, 10), (vec![Bytes::from_slice(b"k")], 1));
    }

    #[test]
    fn a_table_grows_to_the_next_power_of_two_and_shrinks_under_ten_percent_full() {
        let mut t = TableSize::default();
        t.holds(3);
        assert_eq!(t.slots(), 4);
        t.holds(1000);
        assert_eq!(t.slots(), 1024);
        t.holds(1024);
        assert_eq!(
            t.slots(),
            1024,
            "used == size does not grow until the next insert"
        );
        // 102 of 1024 is 9.96 %: shrink to 128; while rehashing both tables count.
        t.plan_shrink(103);
        assert!(!t.is_rehashing(), "10.06 % full stays");
        t.plan_shrink(102);
        assert_eq!(t.slots(), 1024 + 128);
        t.plan_shrink(1);
        assert_eq!(t.slots(), 1024 + 128, "no second resize while rehashing");
        t.finish_rehash();
        assert_eq!(t.slots(), 128);
        t.plan_shrink(0);
        t.finish_rehash();
        assert_eq!(t.slots(), 4, "never below DICT_HT_INITIAL_SIZE");
    }
}
