//! Tokens named once per record. The checkers, the margins and the hazard scan all key what
//! they keep by the token a record names (its lock token, or the value of a key it writes or
//! removes); looking the same bytes up in each of their maps cost a hash and a comparison
//! each, several times a record. Instead the record's token is looked up here once, and the
//! others index their per-token state by the small id it gets (`TokenId`), in vectors.
//!
//! An id stands for one token for as long as the token is known; a streamed monitor that
//! retires tokens (`monitor::Retirement`) frees their ids (`forget`), and a later token may
//! get a freed id again: everything keyed by id forgets the freed ones at the same time.

use crate::history::{Observation, Record};
use crate::proto::Bytes;
use crate::proto::bytes::bytes_eq;
use crate::time::ProcId;

/// A token known to a `Tokens`: an index into the vectors that keep per-token state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenId(u32);

impl TokenId {
    #[inline(always)]
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The id at `index` of a per-token vector.
    pub fn from_index(index: usize) -> TokenId {
        TokenId(u32::try_from(index).expect("token ids fit in 32 bits"))
    }
}

/// What a record names, as `Tokens::name` finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// The record names no token.
    Nothing,
    /// The token, known (or made known by this record).
    Token(TokenId),
    /// A token nothing knows, named by a record that cannot introduce one (a release, a
    /// loss, an extension, a removal): every reader of it finds nothing.
    Unknown,
    /// A token the caller refused (a retired one, see `monitor`).
    Refused,
}

impl Naming {
    /// The id, if the record named a known token.
    #[inline(always)]
    pub fn id(self) -> Option<TokenId> {
        match self {
            Naming::Token(t) => Some(t),
            _ => None,
        }
    }
}

/// Slots of a new table (a power of two): runs of a few hundred tokens never grow it.
const FIRST_SLOTS: usize = 2048;

/// Tokens a new table, and a new per-token vector, make room for: growing them from empty
/// (reallocating and copying at every doubling) cost a run more than its lookups. Room
/// only: memory not written is not touched, so a short run pays nothing for it, and a run
/// of ten seconds of W1 (3,000 tokens) no longer copies its vectors twice.
pub(crate) const FIRST_TOKENS: usize = 4 * FIRST_SLOTS;

/// The tokens known, each with its id: a table of ids, open-addressed by the token's hash
/// (probing the next slot on a collision), over the tokens kept by id. Made for what a
/// monitor does: a lookup or an insert per record and a removal only when retiring, which
/// rebuilds the table (no tombstones). Nothing reads it in slot order, so the hash (fixed)
/// decides no output.
#[derive(Clone)]
pub struct Tokens {
    /// id -> (hash, token) (`None`: a free id).
    names: Vec<Option<(u64, Bytes)>>,
    /// Slot -> id + 1 of the token found there (0: empty). Its length is a power of two, at
    /// least twice the tokens known.
    // Invariant: every known id is in exactly one slot, reached from its hash's slot by
    // probing forward over occupied slots only.
    slots: Vec<u32>,
    /// Tokens known.
    known: usize,
    /// Ids given back by `forget`, reused first.
    free: Vec<TokenId>,
    /// Process index -> the token it last named or was named with (`NOWHERE`: none): most
    /// records name the token their client (or node) named last, and checking that guess
    /// is a comparison of a few bytes, not a hash.
    // Invariant: every id here is known (`forget` clears them all).
    recent: Vec<u32>,
}

impl Default for Tokens {
    fn default() -> Tokens {
        Tokens {
            names: Vec::with_capacity(FIRST_TOKENS),
            slots: vec![0; FIRST_SLOTS],
            known: 0,
            free: Vec::new(),
            recent: Vec::new(),
        }
    }
}

impl Tokens {
    /// The token `r` names, made known if `r` can introduce a token (an attempt, an
    /// acquisition, a key written) and `refuse` does not refuse it. `refuse` is asked only
    /// about tokens not known.
    #[inline(always)]
    pub fn name(&mut self, r: &Record, refuse: impl FnOnce(&Bytes) -> bool) -> Naming {
        // Who likely named the token last: the client (its attempt's, or the retry's its
        // node just wrote), and for a key removed, the node (which wrote it last).
        let (t, introduces, client, node) = match &r.obs {
            // A round's first try names a fresh token, as a rule: a guess of the client's
            // last one would fail, and the table finds a token used again all the same.
            Observation::Attempt { token, .. } => (token, true, None, None),
            Observation::Acquired { token, .. } => (token, true, Some(r.proc), None),
            Observation::Released { token, .. }
            | Observation::Lost { token, .. }
            | Observation::Extended { token, .. } => (token, false, Some(r.proc), None),
            Observation::KeyWritten { value, by, .. } => (value, true, *by, None),
            Observation::KeyRemoved { value, by, .. } => (value, false, *by, Some(r.proc)),
            _ => return Naming::Nothing,
        };
        let id = if let Some(id) = self.guess(client, t) {
            id
        } else if let Some(id) = self.guess(node, t) {
            id
        } else {
            match self.look_up(t, introduces, refuse) {
                Ok(id) => id,
                Err(n) => return n,
            }
        };
        if let Some(c) = client {
            self.remember(c, id);
        }
        self.remember(r.proc, id);
        Naming::Token(TokenId(id))
    }

    /// The id of `t`, made known if `introduces` and not refused; else what the record
    /// names. Inline in each of the monitor's arms, though most records' tokens are
    /// guessed: a call's frame cost a new token (one record in four) more than the code.
    #[inline(always)]
    fn look_up(
        &mut self,
        t: &Bytes,
        introduces: bool,
        refuse: impl FnOnce(&Bytes) -> bool,
    ) -> Result<u32, Naming> {
        let h = hash_of(t);
        let slot = match self.probe(h, t) {
            Ok(id) => return Ok(id),
            Err(slot) => slot,
        };
        if refuse(t) {
            return Err(Naming::Refused);
        }
        if !introduces {
            return Err(Naming::Unknown);
        }
        let id = match self.free.pop() {
            Some(id) => {
                self.names[id.index()] = Some((h, t.clone()));
                id
            }
            None => {
                self.names.push(Some((h, t.clone())));
                TokenId::from_index(self.names.len() - 1)
            }
        };
        self.slots[slot] = id.0 + 1;
        self.known += 1;
        if self.known * 2 > self.slots.len() {
            self.rebuild(self.slots.len() * 2);
        }
        Ok(id.0)
    }

    /// `t`'s id (its hash `h`), or the empty slot where it would go.
    #[inline(always)]
    fn probe(&self, h: u64, t: &Bytes) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            match self.slots[i] {
                0 => return Err(i),
                s => {
                    if let Some((kh, k)) = &self.names[s as usize - 1]
                        && *kh == h
                        && bytes_eq(k, t)
                    {
                        return Ok(s - 1);
                    }
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// The table again, with `len` slots, from the tokens known.
    fn rebuild(&mut self, len: usize) {
        debug_assert!(len.is_power_of_two() && len >= 2 * self.known);
        self.slots = vec![0; len];
        let mask = len - 1;
        for (id, e) in self.names.iter().enumerate() {
            let Some((h, _)) = e else { continue };
            let mut i = *h as usize & mask;
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = id as u32 + 1;
        }
    }

    /// `p`'s latest token, if it is `t`.
    #[inline(always)]
    fn guess(&self, p: Option<ProcId>, t: &Bytes) -> Option<u32> {
        let id = *self.recent.get(p?.index())?;
        let (_, k) = self.names.get(id as usize)?.as_ref()?;
        bytes_eq(k, t).then_some(id)
    }

    #[inline(always)]
    fn remember(&mut self, p: ProcId, id: u32) {
        let i = p.index();
        if self.recent.len() <= i {
            self.recent.resize(i + 1, NOWHERE);
        }
        self.recent[i] = id;
    }

    /// The token of a known id.
    pub fn token(&self, id: TokenId) -> &Bytes {
        &self.names[id.index()].as_ref().expect("a known id").1
    }

    /// Every known token with its id, in order of id.
    pub fn iter(&self) -> impl Iterator<Item = (TokenId, &Bytes)> {
        let known = self.names.iter().enumerate();
        known.filter_map(|(i, e)| e.as_ref().map(|(_, t)| (TokenId::from_index(i), t)))
    }

    /// Tokens known.
    pub fn len(&self) -> usize {
        self.known
    }

    pub fn is_empty(&self) -> bool {
        self.known == 0
    }

    /// Forgets these tokens (known, each once): their ids may be given to new tokens.
    pub fn forget(&mut self, dead: &[TokenId]) {
        for &id in dead {
            let gone = self.names[id.index()].take();
            assert!(gone.is_some(), "forgot a token not known");
            self.known -= 1;
            self.free.push(id);
        }
        // No tombstones: the table is made again, as small as keeps it at most half full.
        let len = (2 * self.known).next_power_of_two().max(FIRST_SLOTS);
        self.rebuild(len);
        self.recent.clear();
    }

    /// Estimated bytes kept: the ids' entries and the table.
    pub fn retained_bytes(&self) -> u64 {
        let entry = std::mem::size_of::<Option<(u64, Bytes)>>();
        (self.names.len() * entry + self.slots.len() * 4) as u64
    }
}

/// No position.
const NOWHERE: u32 = u32::MAX;

/// A hash of a token's bytes, a word at a time (FxHash's step), inline: the hasher's was a
/// call per token and per write. Its low bits pick a token's slot, and a multiplication
/// carries a bit only upwards, so it ends with MurmurHash3's finaliser, which folds every
/// bit into the low ones (a rotation alone left tokens that differ in their last digits
/// crowding a few slots).
#[inline(always)]
fn hash_of(t: &[u8]) -> u64 {
    const K: u64 = 0xf135_7aea_2e62_a9c5;
    let step = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(K);
    let n = t.len();
    let word = |i: usize| u64::from_le_bytes(t[i..i + 8].try_into().expect("8 bytes"));
    let half = |i: usize| u64::from(u32::from_le_bytes(t[i..i + 4].try_into().expect("4 bytes")));
    let mut h = step(0, n as u64);
    let mut i = 0;
    while i + 8 <= n {
        h = step(h, word(i));
        i += 8;
    }
    if i < n {
        // The bytes left, as one word: read back from the end (over bytes already hashed,
        // which is as deterministic) when the token is that long.
        let w = if n >= 8 {
            word(n - 8)
        } else if n >= 4 {
            half(0) | half(n - 4) << 32
        } else {
            u64::from(t[0]) | u64::from(t[n / 2]) << 8 | u64::from(t[n - 1]) << 16
        };
        h = step(h, w);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// `v` grown to hold slot `i` (new slots `fill`). Out of line: rare.
#[inline(never)]
pub(crate) fn grow<T: Clone>(v: &mut Vec<T>, i: usize, fill: T) {
    if v.capacity() == 0 {
        v.reserve(FIRST_TOKENS);
    }
    // Grown by a block: most readers see every other id first (an attempt's token, then
    // the retry's that won), and a call to grow per id costs more than the slot.
    v.resize((i + 1).next_multiple_of(GROW_BY), fill);
}

/// Slots a per-token vector grows by.
const GROW_BY: usize = 64;

/// A per-token vector's slot for `id`, grown to it (new slots `Default`).
#[inline(always)]
pub(crate) fn slot_mut<T: Default + Clone>(v: &mut Vec<T>, id: TokenId) -> &mut T {
    let i = id.index();
    if v.len() <= i {
        grow(v, i, T::default());
    }
    &mut v[i]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(proc: u32, obs: Observation) -> Record {
        Record {
            at: crate::time::SimTime::ZERO,
            proc: ProcId(proc),
            obs,
        }
    }
    fn attempt(proc: u32, t: &str) -> Record {
        rec(
            proc,
            Observation::Attempt {
                lock: 0,
                token: Bytes::from(t),
            },
        )
    }
    fn released(proc: u32, t: &str) -> Record {
        rec(
            proc,
            Observation::Released {
                lock: 0,
                token: Bytes::from(t),
            },
        )
    }

    #[test]
    fn a_token_keeps_its_id_until_forgotten_and_a_forgotten_id_is_given_again() {
        let mut tokens = Tokens::default();
        let a = tokens
            .name(&attempt(1, "c1-1"), |_| false)
            .id()
            .expect("named");
        let b = tokens
            .name(&attempt(2, "c2-1"), |_| false)
            .id()
            .expect("named");
        assert_ne!(a, b);
        // Guessed (the client's latest) and looked up (another client's) alike.
        assert_eq!(
            tokens.name(&released(1, "c1-1"), |_| false),
            Naming::Token(a)
        );
        assert_eq!(
            tokens.name(&released(1, "c2-1"), |_| false),
            Naming::Token(b)
        );
        assert_eq!(tokens.token(a), &Bytes::from("c1-1"));
        tokens.forget(&[a]);
        assert_eq!(tokens.len(), 1);
        assert_eq!(
            tokens.name(&released(1, "c1-1"), |_| false),
            Naming::Unknown
        );
        let c = tokens
            .name(&attempt(3, "c3-1"), |_| false)
            .id()
            .expect("named");
        assert_eq!(c, a, "the freed id is reused");
        assert_eq!(tokens.token(c), &Bytes::from("c3-1"));
        assert_eq!(
            tokens.name(&released(2, "c2-1"), |_| false),
            Naming::Token(b)
        );
    }

    #[test]
    fn an_attempt_naming_a_known_token_gets_its_id_unguessed() {
        // An attempt is not guessed (its token is fresh, as a rule): one that uses a token
        // again, its client's own last one or another's, still finds its id in the table.
        let mut tokens = Tokens::default();
        let a = tokens.name(&attempt(1, "lock-name"), |_| false);
        assert_eq!(tokens.name(&attempt(1, "lock-name"), |_| false), a);
        assert_eq!(tokens.name(&attempt(2, "lock-name"), |_| false), a);
        assert_eq!(tokens.name(&released(2, "lock-name"), |_| false), a);
        assert_eq!(tokens.len(), 1);
    }

    #[test]
    fn a_refused_token_is_not_made_known() {
        let mut tokens = Tokens::default();
        assert_eq!(tokens.name(&attempt(1, "c1-1"), |_| true), Naming::Refused);
        assert_eq!(tokens.name(&released(1, "c1-1"), |_| true), Naming::Refused);
        assert!(tokens.is_empty());
        assert_eq!(
            tokens.name(&rec(1, Observation::Paused), |_| true),
            Naming::Nothing
        );
    }

    #[test]
    fn tokens_that_differ_in_any_byte_or_in_length_hash_apart() {
        // Not a proof of spread, but every byte and the length count: a token's slot is
        // never decided by a part of it alone.
        let base = b"client-17-token-0123456789abcdef";
        for n in 0..=base.len() {
            let t = &base[..n];
            for i in 0..n {
                let mut u = t.to_vec();
                u[i] ^= 1;
                assert_ne!(hash_of(t), hash_of(&u), "length {n}, byte {i}");
            }
            if n > 0 {
                assert_ne!(hash_of(t), hash_of(&t[..n - 1]), "length {n}");
            }
        }
        // Counted tokens, as the clients name them, fill the low bits evenly enough that
        // a table of 2,048 slots holding 1,000 of them probes little.
        let mut slots = vec![false; 2048];
        let mut probes = 0;
        for i in 0..1000 {
            let t = format!("c{}-{}", i % 8, i / 8);
            let mut s = hash_of(t.as_bytes()) as usize & 2047;
            while slots[s] {
                s = (s + 1) & 2047;
                probes += 1;
            }
            slots[s] = true;
        }
        assert!(probes < 1000, "{probes} extra probes");
    }

    #[test]
    fn the_table_grows_and_shrinks_and_still_finds_every_token() {
        let mut tokens = Tokens::default();
        let n = 3 * FIRST_SLOTS;
        let ids: Vec<TokenId> = (0..n)
            .map(|i| {
                let r = attempt(1, &format!("c1-{i}"));
                tokens.name(&r, |_| false).id().expect("named")
            })
            .collect();
        assert_eq!(tokens.len(), n);
        // From another process, so that no guess finds them: every one by its hash.
        for (i, id) in ids.iter().enumerate() {
            let r = released(2, &format!("c1-{i}"));
            assert_eq!(tokens.name(&r, |_| false), Naming::Token(*id));
        }
        let dead: Vec<TokenId> = ids.iter().copied().step_by(2).collect();
        tokens.forget(&dead);
        for (i, id) in ids.iter().enumerate() {
            let r = released(2, &format!("c1-{i}"));
            let want = if i % 2 == 0 {
                Naming::Unknown
            } else {
                Naming::Token(*id)
            };
            assert_eq!(tokens.name(&r, |_| false), want);
        }
        assert_eq!(tokens.iter().count(), n / 2);
    }
}
