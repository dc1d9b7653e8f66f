//! Tokens named once per record. The checkers, the margins and the hazard scan all key what
//! they keep by the token a record names (its lock token, or the value of a key it writes or
//! removes); looking the same bytes up in each of their maps cost a hash and a comparison
//! each, several times a record. Instead the record's token is looked up here once, and the
//! others index their per-token state by the small id it gets (`TokenId`), in vectors.
//!
//! An id stands for one token for as long as the token is known; a streamed monitor that
//! retires tokens (`monitor::Retirement`) frees their ids (`forget`), and a later token may
//! get a freed id again: everything keyed by id forgets the freed ones at the same time.

use std::hash::BuildHasher;

use indexmap::IndexMap;
use indexmap::map::raw_entry_v1::{RawEntryApiV1, RawEntryMut};
use rustc_hash::FxBuildHasher;

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

/// Tokens a monitor makes room for at first: runs of a few hundred attempts never grow
/// the map (growing it, from empty, cost a run more than its lookups).
const FIRST_CAPACITY: usize = 1024;

/// The tokens known, each with its id.
#[derive(Clone)]
pub struct Tokens {
    /// token -> id. Fixed hasher: deterministic (nothing iterates it in hash order anyway).
    ids: IndexMap<Bytes, TokenId, FxBuildHasher>,
    /// id -> the position of its entry in `ids` (`NOWHERE` for a free id): the token is
    /// kept once, in the map.
    // Invariant: `ids[at[i]]` is `(token, i)` for every known id `i`.
    at: Vec<u32>,
    /// Ids given back by `forget`, reused first.
    free: Vec<TokenId>,
    /// Process index -> the position in `ids` of the token it last named or was named with
    /// (`NOWHERE`: none): most records name the token their client (or node) named last,
    /// and checking that guess is a comparison of a few bytes, not a hash.
    // Invariant: every position here is `ids`' (`forget`, which moves entries, clears them
    // all).
    recent: Vec<u32>,
}

impl Default for Tokens {
    fn default() -> Tokens {
        Tokens {
            ids: IndexMap::with_capacity_and_hasher(FIRST_CAPACITY, FxBuildHasher),
            at: Vec::with_capacity(FIRST_CAPACITY),
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
            Observation::Attempt { token, .. } | Observation::Acquired { token, .. } => {
                (token, true, Some(r.proc), None)
            }
            Observation::Released { token, .. }
            | Observation::Lost { token, .. }
            | Observation::Extended { token, .. } => (token, false, Some(r.proc), None),
            Observation::KeyWritten { value, by, .. } => (value, true, *by, None),
            Observation::KeyRemoved { value, by, .. } => (value, false, *by, Some(r.proc)),
            _ => return Naming::Nothing,
        };
        let at = if let Some(at) = self.guess(client, t) {
            at
        } else if let Some(at) = self.guess(node, t) {
            at
        } else {
            match self.look_up(t, introduces, refuse) {
                Ok(at) => at,
                Err(n) => return n,
            }
        };
        if let Some(c) = client {
            self.remember(c, at);
        }
        self.remember(r.proc, at);
        Naming::Token(self.ids[at as usize])
    }

    /// The position in `ids` of `t`, made known if `introduces` and not refused; else what
    /// the record names. Out of line: most records' tokens are guessed.
    #[inline(never)]
    fn look_up(
        &mut self,
        t: &Bytes,
        introduces: bool,
        refuse: impl FnOnce(&Bytes) -> bool,
    ) -> Result<u32, Naming> {
        let h = self.ids.hasher().hash_one(t);
        match self.ids.raw_entry_mut_v1().from_hash(h, |k| bytes_eq(k, t)) {
            RawEntryMut::Occupied(e) => Ok(e.index() as u32),
            RawEntryMut::Vacant(e) => {
                if !introduces {
                    return Err(if refuse(t) {
                        Naming::Refused
                    } else {
                        Naming::Unknown
                    });
                }
                if refuse(t) {
                    return Err(Naming::Refused);
                }
                let id = match self.free.pop() {
                    Some(id) => id,
                    None => {
                        self.at.push(NOWHERE);
                        TokenId::from_index(self.at.len() - 1)
                    }
                };
                let at = u32::try_from(e.index()).expect("fewer than 2^32 tokens");
                self.at[id.index()] = at;
                e.insert_hashed_nocheck(h, t.clone(), id);
                Ok(at)
            }
        }
    }

    /// The token of a known id.
    #[inline(always)]
    fn entry(&self, id: TokenId) -> &Bytes {
        self.ids
            .get_index(self.at[id.index()] as usize)
            .expect("a known id")
            .0
    }

    /// The position in `ids` of `p`'s latest token, if that is `t`.
    #[inline(always)]
    fn guess(&self, p: Option<ProcId>, t: &Bytes) -> Option<u32> {
        let at = *self.recent.get(p?.index())?;
        let (k, _) = self.ids.get_index(at as usize)?;
        bytes_eq(k, t).then_some(at)
    }

    #[inline(always)]
    fn remember(&mut self, p: ProcId, at: u32) {
        let i = p.index();
        if self.recent.len() <= i {
            self.recent.resize(i + 1, NOWHERE);
        }
        self.recent[i] = at;
    }

    /// The token of a known id.
    pub fn token(&self, id: TokenId) -> &Bytes {
        self.entry(id)
    }

    /// Every known token with its id.
    pub fn iter(&self) -> impl Iterator<Item = (TokenId, &Bytes)> {
        self.ids.iter().map(|(t, id)| (*id, t))
    }

    /// Tokens known.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Forgets these tokens (known, each once): their ids may be given to new tokens.
    pub fn forget(&mut self, dead: &[TokenId]) {
        for &id in dead {
            let at = std::mem::replace(&mut self.at[id.index()], NOWHERE) as usize;
            let gone = self.ids.swap_remove_index(at).map(|(_, id)| id);
            assert_eq!(gone, Some(id), "forgot a token not known");
            if let Some((_, &moved)) = self.ids.get_index(at) {
                self.at[moved.index()] = at as u32;
            }
            self.free.push(id);
        }
        self.recent.clear();
    }

    /// Estimated bytes kept: the map's entry (hash, token, id) and index slot, and the
    /// id's position.
    pub fn retained_bytes(&self) -> u64 {
        let entry = 8 + std::mem::size_of::<Bytes>() + 8;
        (self.at.len() * 4 + self.ids.len() * (entry + 8)) as u64
    }
}

/// No position.
const NOWHERE: u32 = u32::MAX;

/// Slots a per-token vector grows by.
pub(crate) const GROW_BY: usize = 64;

/// A per-token vector's slot for `id`, grown to it (new slots `Default`).
#[inline(always)]
pub(crate) fn slot_mut<T: Default + Clone>(v: &mut Vec<T>, id: TokenId) -> &mut T {
    let i = id.index();
    if v.len() <= i {
        // Grown by a block: most readers see every other id first (an attempt's token,
        // then the retry's that won), and a call to grow per id costs more than the slot.
        v.resize((i + 1).next_multiple_of(GROW_BY), T::default());
    }
    &mut v[i]
}
