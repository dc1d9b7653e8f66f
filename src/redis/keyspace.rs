//! One Redis database: keys, values and absolute expiries on the node's wall clock.

use indexmap::IndexMap;
use rustc_hash::FxBuildHasher;

use crate::proto::Bytes;

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
    pub fn shared_bytes(&self) -> Bytes {
        match self {
            Value::Str(b) => b.clone(),
            Value::List(_) => Bytes::new(),
            Value::Hash(fields) => fields.first().map(|(f, _)| f.clone()).unwrap_or_default(),
        }
    }
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
#[derive(Clone, Debug, Default)]
pub struct Keyspace {
    map: IndexMap<Bytes, Entry, FxBuildHasher>,
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
        self.map.get(key)
    }
    /// Position of a key (one hash and probe), for a lookup followed by an access.
    pub fn index_of(&self, key: &[u8]) -> Option<usize> {
        self.map.get_index_of(key)
    }
    pub fn at(&self, i: usize) -> &Entry {
        &self.map[i]
    }
    pub fn at_mut(&mut self, i: usize) -> &mut Entry {
        &mut self.map[i]
    }
    /// Removes the entry at a position (swap-removal, as `remove`).
    pub fn remove_at(&mut self, i: usize) -> Option<(Bytes, Entry)> {
        self.map.swap_remove_index(i)
    }
    pub fn raw_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.map.get_mut(key)
    }
    pub fn insert(&mut self, key: Bytes, entry: Entry) -> Option<Entry> {
        self.map.insert(key, entry)
    }
    /// Removes a key; returns the stored key (shared) and its entry.
    pub fn remove(&mut self, key: &[u8]) -> Option<(Bytes, Entry)> {
        self.map.swap_remove_entry(key)
    }
    pub fn clear(&mut self) {
        self.map.clear();
    }
    pub fn iter(&self) -> impl Iterator<Item = (&Bytes, &Entry)> {
        self.map.iter()
    }
    /// Keys with a deadline at or before `now_ms` (active expiry's `now >= t` rule), at most
    /// `limit` of them, in keyspace order.
    pub fn due_keys(&self, now_ms: i64, limit: usize) -> Vec<Bytes> {
        // A plain loop: the cron asks every 100 ms, and almost always for nothing.
        let mut due = Vec::new();
        for (k, e) in &self.map {
            if due.len() == limit {
                break;
            }
            if e.expire_at_ms.is_some_and(|t| now_ms >= t) {
                due.push(k.clone());
            }
        }
        due
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
    fn expiry_rules_differ_by_one_ms() {
        let e = Entry {
            value: Value::Str(Bytes::from_slice(b"v")),
            expire_at_ms: Some(100),
        };
        assert!(!e.is_expired(100), "lazy: now > t");
        let mut ks = Keyspace::new();
        ks.insert(Bytes::from_slice(b"k"), e);
        assert_eq!(
            ks.due_keys(100, 10),
            vec![Bytes::from_slice(b"k")],
            "active: now >= t"
        );
    }
}
